import { AsyncSubject, type Observable } from 'rxjs';

/** One batch of a write queue: its ops, whether its commit has settled, and who waits on it. */
export interface Batch<Op> {
  readonly ops: Op[];
  settled: boolean;
  /** Created on demand: most batches are only written, never waited on. */
  done?: AsyncSubject<never>;
  done$?: Observable<never>;
}

export const openBatch = <Op>(): Batch<Op> => ({ ops: [], settled: false });

/** Completes (emitting nothing) when the batch has committed; errors if it failed. One Observable per batch. */
export function batchDone$<Op>(batch: Batch<Op>): Observable<never> {
  batch.done ??= new AsyncSubject<never>();
  return (batch.done$ ??= batch.done.asObservable());
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
    settled(batch);
    if (!batch.done) return;
    if (error === undefined) batch.done.complete();
    else batch.done.error(error);
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
