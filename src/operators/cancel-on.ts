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
      // Created before the notifier is subscribed, so a notifier that fires at once finds it.
      const upstream = new Subscription();
      subscriber.add(upstream);
      subscriber.add(
        from(cancel$).subscribe({
          next: () => {
            upstream.unsubscribe();
            subscriber.complete();
          },
          error: (error: unknown) => subscriber.error(error),
        }),
      );
      if (subscriber.closed) return;
      // A forwarding observer, not `subscriber` itself: unsubscribing upstream must not close downstream.
      upstream.add(
        source.subscribe({
          next: (value) => subscriber.next(value),
          error: (error: unknown) => subscriber.error(error),
          complete: () => subscriber.complete(),
        }),
      );
    });
}
