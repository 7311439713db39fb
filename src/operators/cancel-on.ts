import { from, Observable, Subscription, type MonoTypeOperatorFunction, type ObservableInput } from 'rxjs';

/**
 * Ends the source when `cancel$` emits, tearing the source down *before* completing. That order is
 * the whole point, and why this is not `takeUntil`: `takeUntil` completes downstream first and
 * unsubscribes upstream after, so what the teardown publishes (an open pause resolved as
 * `cancelled`, an aborted tool) would arrive after the run's end. Here it arrives before.
 *
 * ```
 * source:  --a--b------|
 * cancel$: -------x
 * output:  --a--b-|          (source unsubscribed at x, then complete)
 * ```
 *
 * A `cancel$` that emits during subscribe completes the output at once, without subscribing the
 * source. Errors from the source pass through; an error from `cancel$` is passed on as an error.
 * Unsubscribing the output unsubscribes both.
 *
 * @example
 * loop$.pipe(cancelOn(cancel$))
 */
export function cancelOn<T>(cancel$: ObservableInput<unknown>): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      let upstream: Subscription | undefined;
      const notifier = from(cancel$).subscribe({
        next: () => {
          // Read only once set: a notifier that fires during its own subscribe finds nothing to tear down.
          upstream?.unsubscribe();
          subscriber.complete();
        },
        error: (error: unknown) => subscriber.error(error),
      });
      // Closed already when the notifier fired (or failed) during subscribe: the source is never subscribed.
      if (subscriber.closed) return notifier;
      // A forwarding observer, not `subscriber` itself: unsubscribing upstream must not close downstream.
      upstream = source.subscribe({
        next: (value) => subscriber.next(value),
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
      return () => {
        notifier.unsubscribe();
        upstream?.unsubscribe();
      };
    });
}
