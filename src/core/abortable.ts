import { from, Observable, type ObservableInput } from 'rxjs';

/**
 * Wraps a Promise-, async-iterable- or Observable-returning call so that unsubscribing
 * aborts its AbortSignal. This is the one place where SDK and tool calls meet RxJS
 * cancellation: `takeUntil(cancel$)` upstream becomes `signal.abort()` here.
 * The signal is not aborted once the call has completed or failed on its own.
 */
export function fromAbortable<T>(call: (signal: AbortSignal) => ObservableInput<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    const controller = new AbortController();
    let settled = false;
    let inner: ObservableInput<T>;
    try {
      inner = call(controller.signal);
    } catch (error) {
      subscriber.error(error);
      return;
    }
    const subscription = from(inner).subscribe({
      next: (value) => subscriber.next(value),
      error: (error) => {
        settled = true;
        subscriber.error(error);
      },
      complete: () => {
        settled = true;
        subscriber.complete();
      },
    });
    return () => {
      subscription.unsubscribe();
      if (!settled) controller.abort(new Error('aborted: the run was cancelled or timed out'));
    };
  });
}
