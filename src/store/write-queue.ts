import { catchError, EMPTY, lastValueFrom, throwError, type Observable } from 'rxjs';
import { failureOf, PartialCommitFailure } from '../core/commit-failure.js';
import { batchDone$, commitBatch, openBatch, type Batch } from './write-batch.js';

export interface WriteQueueConfig<Op> {
  /**
   * Commits one batch, in queue order: synchronously (SQLite: one transaction) or by a Promise (Redis:
   * one pipeline). Throwing or rejecting fails that batch only. Batches never overlap.
   */
  readonly commit: (ops: readonly Op[]) => void | Promise<void>;
  /** When to commit a batch that has started. Default `setImmediate`: every write of one tick joins it. */
  readonly schedule?: (task: () => void) => void;
}

/**
 * The ordered write queue of an adapter: writes return at once and are committed in batches, so the
 * loop never waits on a disk or a round trip per event, and a batch that committed implies that every
 * write queued before it did too.
 */
export interface WriteQueue<Op> {
  push(op: Op): void;
  /**
   * Completes (emitting nothing) once everything pushed so far is committed; errors if its batch failed.
   * The same Observable for every call while one batch is open, so a caller waiting on many writes
   * can wait once per batch (the frame log's commit queue). With `convId`, it errors only when that
   * conversation's writes failed (a batch that failed is retried one conversation at a time).
   */
  committed(convId?: string): Observable<never>;
  /** `committed()` as a Promise. */
  flush(): Promise<void>;
  /**
   * Starts committing the open batch now instead of at its scheduled time (before a read, at close);
   * behind a commit in flight, as soon as that one settles.
   */
  commitNow(): void;
}

export function createWriteQueue<Op>(config: WriteQueueConfig<Op>): WriteQueue<Op> {
  const schedule = config.schedule ?? ((task: () => void) => void setImmediate(task));
  let open: Batch<Op> | undefined;
  // The last batch taken from `open`: until it settles, `committed()` waits for it.
  let latest: Batch<Op> | undefined;
  // Whether an asynchronous commit is in flight. What is written meanwhile stays in the open batch and
  // goes in one commit once it settles. Taken a tick at a time instead, small batches queued behind one
  // another, a round trip each: a decision written under load waited for several.
  let inFlight = false;

  // Why the batch that settled last failed, if it did: a conversation's waiter that comes after a
  // synchronous commit (SQLite) took its writes still hears of their failure.
  let lastFailure: unknown;
  // Nothing waits on a settled batch: its ops (a tick's frames and turns) need not outlive it.
  const forget = (batch: Batch<Op>): void => {
    lastFailure = batch.failure;
    if (latest === batch) latest = undefined;
  };

  const commitOpen = (): void => {
    const batch = open;
    if (inFlight || !batch) return;
    open = undefined;
    latest = batch;
    const settled = commitBatch(config.commit, batch, forget);
    if (!settled) return;
    inFlight = true;
    void settled.then(() => {
      inFlight = false;
      commitOpen();
    });
  };

  const committed = (convId?: string): Observable<never> => {
    const batch = open ?? (latest && !latest.settled ? latest : undefined);
    if (batch) return batchDone$(batch, convId);
    const failure = convId === undefined || lastFailure === undefined ? undefined : failureOf(lastFailure, convId);
    return failure === undefined ? EMPTY : throwError(() => failure);
  };

  return {
    push: (op) => {
      if (!open) {
        open = openBatch();
        schedule(commitOpen);
      }
      open.ops.push(op);
    },
    committed,
    commitNow: commitOpen,
    // What failed of one conversation is that conversation's to hear of (`committed(convId)`), not every reader's.
    flush: () => lastValueFrom(committed().pipe(catchError((error: unknown) => (error instanceof PartialCommitFailure ? EMPTY : throwError(() => error)))), { defaultValue: undefined }),
  };
}
