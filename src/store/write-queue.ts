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
  /**
   * `committed(convId)` of what is pushed so far, after `commitNow()`: when the commit is synchronous
   * (SQLite), its outcome at once (completed, or the conversation's failure) rather than a wait on a
   * batch that has settled already.
   */
  commitNowFor(convId: string): Observable<never>;
}

export function createWriteQueue<Op>(config: WriteQueueConfig<Op>): WriteQueue<Op> {
  const schedule = config.schedule ?? ((task: () => void) => void setImmediate(task));
  const line: BatchLine<Op> = { open: undefined, latest: undefined, inFlight: false, lastFailure: undefined };
  // Nothing waits on a settled batch: its ops (a tick's frames and turns) need not outlive it.
  const forget = (batch: Batch<Op>): void => {
    line.lastFailure = batch.failure;
    if (line.latest === batch) line.latest = undefined;
  };
  const afterFlight = (): void => {
    line.inFlight = false;
    commitOpen();
  };
  const commitOpen = (): void => {
    const batch = line.open;
    if (line.inFlight || !batch) return;
    line.open = undefined;
    line.latest = batch;
    const settled = commitBatch(config.commit, batch, forget);
    if (!settled) return;
    line.inFlight = true;
    void settled.then(afterFlight);
  };
  const committed = (convId?: string): Observable<never> => {
    const batch = pendingBatch(line);
    return batch ? batchDone$(batch, convId) : outcome(line.lastFailure, convId);
  };
  // A batch committed early (`commitNow`, as a run waiting on its commit does at every step) leaves its
  // scheduled commit behind: the next batch of the same tick joins that one rather than scheduling another.
  const scheduleCommit = scheduleOnce(schedule, commitOpen);

  return {
    push: (op) => {
      if (!line.open) {
        line.open = openBatch();
        scheduleCommit();
      }
      line.open.ops.push(op);
    },
    committed,
    commitNow: commitOpen,
    commitNowFor: (convId) => {
      const batch = line.open;
      if (!batch || line.inFlight) return committed(convId);
      commitOpen();
      return batch.settled ? outcome(batch.failure, convId) : batchDone$(batch, convId);
    },
    flush: () => allCommitted(committed()),
  };
}

/**
 * Where a queue's batches stand. One record rather than loose variables so the queue's states (filling,
 * committing, settled) read in one place, apart from the operations that move between them.
 */
interface BatchLine<Op> {
  /** The batch that pushes join, until a commit takes it. */
  open: Batch<Op> | undefined;
  /** The last batch taken from `open`: until it settles, `committed()` waits for it. */
  latest: Batch<Op> | undefined;
  /**
   * Whether an asynchronous commit is in flight. What is written meanwhile stays in the open batch and
   * goes in one commit once it settles. Taken a tick at a time instead, small batches queued behind one
   * another, a round trip each: a decision written under load waited for several.
   */
  inFlight: boolean;
  /**
   * Why the batch that settled last failed, if it did: a conversation's waiter that comes after a
   * synchronous commit (SQLite) took its writes still hears of their failure.
   */
  lastFailure: unknown;
}

/** The batch a waiter depends on now: the open one, else the one still committing. */
function pendingBatch<Op>(line: BatchLine<Op>): Batch<Op> | undefined {
  return line.open ?? (line.latest && !line.latest.settled ? line.latest : undefined);
}

/**
 * `committed()` as a Promise for a reader of every conversation. What failed of one conversation is that
 * conversation's to hear of (`committed(convId)`), not every reader's, so a partial failure resolves.
 */
function allCommitted(committed$: Observable<never>): Promise<void> {
  return lastValueFrom(committed$.pipe(catchError(unlessPartial)), { defaultValue: undefined });
}

function unlessPartial(error: unknown): Observable<never> {
  return error instanceof PartialCommitFailure ? EMPTY : throwError(() => error);
}

/** How a settled batch went for a conversation's writes: nothing to wait on, or their failure. */
function outcome(failure: unknown, convId: string | undefined): Observable<never> {
  const own = convId === undefined || failure === undefined ? undefined : failureOf(failure, convId);
  return own === undefined ? EMPTY : throwError(() => own);
}

/** `task`, scheduled at most once until it runs. */
function scheduleOnce(schedule: (task: () => void) => void, task: () => void): () => void {
  let pending = false;
  const run = (): void => {
    pending = false;
    task();
  };
  return () => {
    if (pending) return;
    pending = true;
    schedule(run);
  };
}
