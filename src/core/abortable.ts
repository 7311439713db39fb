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
    let input: ObservableInput<T>;
    try {
      input = call(controller.signal);
    } catch (error) {
      subscriber.error(error);
      return;
    }
    return abortOnUnsubscribe(input, () => controller.abort(new Error('aborted: the run was cancelled or timed out'))).subscribe(subscriber);
  });
}

/**
 * Follows `input`, and calls `abort` when unsubscribed before it settled (completed or failed), so
 * work that is still running hears about the cancellation and finished work does not.
 */
export function abortOnUnsubscribe<T>(input: ObservableInput<T>, abort: () => void): Observable<T> {
  return new Observable<T>((subscriber) => {
    let settled = false;
    const subscription = from(input).subscribe({
      next: (value) => subscriber.next(value),
      error: (error: unknown) => {
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
      if (!settled) abort();
    };
  });
}
