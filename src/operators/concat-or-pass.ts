import { isObservable, Observable, type MonoTypeOperatorFunction, type Subscription } from 'rxjs';

/**
 * Serial like `concatMap`, but a projection that answers synchronously with a plain value is
 * emitted at once, with no inner Observable or subscription. The loop's steps mostly pass a state
 * straight through (step mode off, no hook, nothing pending); this keeps those passes almost free
 * while a real wait (an inference, a pause, running tools) still flattens in order.
 *
 * ```
 * source:  --a--b----c--|
 * project:   a → a'  (value)   b → --B|  (Observable)   c → c' (queued until B completes)
 * output:  --a'------B-c'|
 * ```
 *
 * Completes when the source has completed and the last inner has completed. An error from the
 * source, an inner or the projection errors the output. Unsubscribing tears down the active inner.
 *
 * @example
 * source.pipe(concatOrPass((state) => (needsWait(state) ? wait$(state) : state)))
 */
export function concatOrPass<T>(project: (value: T) => T | Observable<T>): MonoTypeOperatorFunction<T>;
/**
 * With `select`, an inner value is mapped with its outer value before it is emitted: the `map` a
 * caller would otherwise append stays alive as long as the inner does (a pause may last minutes).
 */
export function concatOrPass<T, I>(project: (value: T) => T | Observable<I>, select: (inner: I, outer: T) => T): MonoTypeOperatorFunction<T>;
export function concatOrPass<T, I>(project: (value: T) => T | Observable<I>, select?: (inner: I, outer: T) => T): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      const queue: T[] = [];
      let inner: Subscription | undefined;
      let active = false;
      let sourceDone = false;
      let draining = false;

      const drain = (): void => {
        // Inners that complete synchronously call back into drain; the loop below picks up from there.
        if (draining) return;
        draining = true;
        try {
          while (!active && queue.length > 0 && !subscriber.closed) {
            const outer = queue.shift() as T;
            const output = project(outer);
            if (!isObservable(output)) {
              subscriber.next(output);
              continue;
            }
            active = true;
            inner = output.subscribe({
              next: (value) => subscriber.next(select ? select(value, outer) : (value as unknown as T)),
              error: (error: unknown) => subscriber.error(error),
              complete: () => {
                active = false;
                inner = undefined;
                drain();
              },
            });
          }
          if (!active && sourceDone && queue.length === 0) subscriber.complete();
        } catch (error) {
          subscriber.error(error);
        } finally {
          draining = false;
        }
      };

      const upstream = source.subscribe({
        next: (value) => {
          queue.push(value);
          drain();
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          sourceDone = true;
          drain();
        },
      });
      return () => {
        inner?.unsubscribe();
        upstream.unsubscribe();
      };
    });
}
