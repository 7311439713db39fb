import { catchError, EMPTY, Observable, throwError, type Subscriber } from 'rxjs';
import { failureOf } from '../core/commit-failure.js';

/** One batch of a write queue: its ops, whether its commit has settled, and who waits on it. */
export interface Batch<Op> {
  readonly ops: Op[];
  settled: boolean;
  /** Why the commit failed, once settled; undefined when it committed. */
  failure?: unknown;
  /**
   * Who waits on it, created on demand (most batches are only written, never waited on). A Set, not an
   * AsyncSubject: a Subject's waiters each search its list as they leave when it completes, which
   * with 100 000 runs waiting on one batch (their pauses' deadlines passing together) held the event
   * loop for seconds; a Set lets each leave at once.
   */
  waiters?: Set<Subscriber<never>>;
  done$?: Observable<never>;
}

export const openBatch = <Op>(): Batch<Op> => ({ ops: [], settled: false });

/**
 * Completes (emitting nothing) when the batch has committed; errors if it failed. One Observable per
 * batch; with `convId`, one per call that errors only when that conversation's writes failed.
 */
export function batchDone$<Op>(batch: Batch<Op>, convId?: string): Observable<never> {
  if (convId !== undefined) return batchDone$(batch).pipe(catchError((failure: unknown) => failedFor(failure, convId)));
  return (batch.done$ ??= new Observable<never>((subscriber) => {
    if (batch.settled) return tell(subscriber, batch);
    const waiters = (batch.waiters ??= new Set());
    waiters.add(subscriber);
    return () => void waiters.delete(subscriber);
  }));
}

/** A conversation's part of a batch's failure: its error, or nothing when its writes committed. */
const failedFor = (failure: unknown, convId: string): Observable<never> => {
  const own = failureOf(failure, convId);
  return own === undefined ? EMPTY : throwError(() => own);
};

function tell<Op>(subscriber: Subscriber<never>, batch: Batch<Op>): void {
  if (batch.failure === undefined) subscriber.complete();
  else subscriber.error(batch.failure);
}

/**
 * Commits one batch and tells its waiters how it went; returns a Promise only when the commit is
 * asynchronous. `settled` hears of it first, so the queue stops holding the batch before anyone runs.
 */
export function commitBatch<Op>(
  commit: (ops: readonly Op[]) => void | Promise<void>,
  batch: Batch<Op>,
  settled: (batch: Batch<Op>) => void,
): Promise<void> | undefined {
  const settle = (error?: unknown): void => {
    batch.settled = true;
    batch.failure = error;
    settled(batch);
    const { waiters } = batch;
    batch.waiters = undefined;
    if (waiters) for (const waiter of waiters) tell(waiter, batch);
  };
  let result: void | Promise<void>;
  try {
    result = commit(batch.ops);
  } catch (error) {
    settle(error ?? new Error('commit failed'));
    return undefined;
  }
  if (!result) {
    settle();
    return undefined;
  }
  return result.then(
    () => settle(),
    (error: unknown) => settle(error ?? new Error('commit failed')),
  );
}
