import { Observable, type MonoTypeOperatorFunction, type ObservableInput, from } from 'rxjs';

/**
 * Like `takeUntil`, but tears the source down *before* completing. `takeUntil` completes downstream
 * first and unsubscribes upstream after, so what the teardown publishes (a pause resolved as
 * `cancelled`, an aborted tool) would arrive after the run's end. Here it arrives before.
 *
 * ```
 * source:  --a--b------|
 * cancel$: -------x
 * output:  --a--b-|          (source unsubscribed at x, then complete)
 * ```
 *
 * Errors from the source pass through; an error from `cancel$` is passed on as an error.
 *
 * @example
 * run$.pipe(cancelOn(cancel$))
 */
export function cancelOn<T>(cancel$: ObservableInput<unknown>): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      let cancelled = false;
      const notifier = from(cancel$).subscribe({
        next: () => {
          if (cancelled) return;
          cancelled = true;
          upstream?.unsubscribe();
          subscriber.complete();
        },
        error: (error) => subscriber.error(error),
      });
      if (cancelled) return notifier;
      // A forwarding observer, not `subscriber` itself: unsubscribing upstream must not close downstream.
      const upstream = source.subscribe({
        next: (value) => subscriber.next(value),
        error: (error) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
      return () => {
        notifier.unsubscribe();
        upstream.unsubscribe();
      };
    });
}
