import { EMPTY, lastValueFrom, type Observable } from 'rxjs';
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
   * can wait once per batch (the frame log's commit queue).
   */
  committed(): Observable<never>;
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
  // another, a round trip each: a decision written under load waited for several (the soak).
  let inFlight = false;

  // Nothing waits on a settled batch: its ops (a tick's frames and turns) need not outlive it.
  const forget = (batch: Batch<Op>): void => {
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

  const committed = (): Observable<never> => {
    const batch = open ?? (latest && !latest.settled ? latest : undefined);
    return batch ? batchDone$(batch) : EMPTY;
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
    flush: () => lastValueFrom(committed(), { defaultValue: undefined }),
  };
}
