import type { Database } from 'better-sqlite3';
import { throwError } from 'rxjs';
import type { FrameEvent, Store } from '../../core/store.js';
import { StoreClosedError } from '../../core/store-errors.js';
import type { Retention } from '../retention.js';
import { byConversation, queuedWrites, type StoreWrites, type WriteOp } from '../write-ops.js';
import { PartialCommitFailure } from '../../core/commit-failure.js';
import { createFirstInTurn } from '../first-in-turn.js';
import { createWriteQueue } from '../write-queue.js';
import { createQueuedSeqs, type QueuedSeqs } from './queued-seqs.js';
import { createBatchWriter } from './writes.js';

/** The SQLite store's writes: the port's, and what the store around them needs of its queue. */
export interface SqliteWritePath<E extends FrameEvent> extends StoreWrites<E>, Pick<Store<E>, 'committed$' | 'flush'> {
  /** Commits what is queued, now (a synchronous transaction). */
  commitNow(): void;
  /** Each conversation's last seq, queued frames included. */
  readonly seqs: QueuedSeqs;
  /** The conversation's session closed: commit what is queued of it and forget what speeds its writes. */
  forget(convId: string): void;
  readonly isClosed: () => boolean;
  /** Commits what is queued; every write after it throws `StoreClosedError`. */
  close(): void;
}

/**
 * Writes queued in order and committed in one transaction per batch (everything queued during one
 * tick of the event loop), so the loop never waits on a disk write per event; appends are checked
 * against each conversation's last seq when queued. `storedLastSeq` reads a last seq from the file.
 */
export function createSqliteWritePath<E extends FrameEvent>(db: Database, retention: Retention, storedLastSeq: (convId: string) => number): SqliteWritePath<E> {
  const write = createBatchWriter(db, retention);
  const seqs = createQueuedSeqs(storedLastSeq);
  const firstInTurn = createFirstInTurn();
  const queue = transactionQueue(write, seqs);
  let closed = false;
  const push = (op: WriteOp): void => {
    if (closed) throw new StoreClosedError('sqlite');
    queue.push(op);
  };

  return {
    ...queuedWrites(push),
    appendFrames: (frames) => {
      if (closed) throw new StoreClosedError('sqlite');
      const refused = seqs.advance(frames);
      if (refused) return throwError(() => refused);
      if (frames.length > 0) queue.push({ kind: 'frames', frames });
      return queue.committed();
    },
    deleteConversation: (conv_id) => {
      push({ kind: 'conversation-deleted', conv_id });
      // A conversation created again under the same id starts a new log.
      seqs.set(conv_id, 0);
    },
    // The first run waiting in a turn commits now (a synchronous transaction: its tool starts in the same
    // tick, what it waits for on disk when the transaction returns); other runs join the turn's batch
    // (../first-in-turn.ts: many runs, a transaction each otherwise).
    // A commit that went through is answered with nothing to wait on.
    committed$: (convId) => (firstInTurn(convId) ? queue.commitNowFor(convId) : queue.committed(convId)),
    flush: () => {
      queue.commitNow();
      return queue.flush();
    },
    commitNow: () => queue.commitNow(),
    seqs,
    forget: (convId) => {
      // What is queued of it is committed first: its last seq is then the one stored.
      queue.commitNow();
      seqs.delete(convId);
      write.forget(convId);
    },
    isClosed: () => closed,
    close: () => {
      closed = true;
      queue.commitNow();
    },
  };
}

/**
 * The write queue whose every batch is one transaction of `write`. A batch that fails is written again
 * one conversation at a time (docs/protocol.md, A 200 means committed): the others' writes commit,
 * and only the conversations whose own writes fail hear of it.
 */
function transactionQueue(write: (ops: readonly WriteOp[]) => void, seqs: Pick<QueuedSeqs, 'clear'>) {
  return createWriteQueue<WriteOp>({
    commit: (ops) => {
      try {
        write(ops);
      } catch (error) {
        // The batch rolled back: its frames are not there, so the queued seqs are not either.
        seqs.clear();
        const failure = writeApart(write, ops, error);
        if (failure !== undefined) throw failure;
      }
    },
  });
}

/** Each conversation's writes of a failed batch in a transaction of their own; what still failed, if anything. */
function writeApart(write: (ops: readonly WriteOp[]) => void, ops: readonly WriteOp[], error: unknown): unknown {
  const groups = byConversation(ops);
  if (groups.size < 2) return error;
  const failures = new Map<string, unknown>();
  for (const [convId, group] of groups) {
    try {
      write(group);
    } catch (own) {
      failures.set(convId, own);
    }
  }
  if (failures.size === 0) return undefined;
  return failures.size === groups.size ? error : new PartialCommitFailure(failures);
}
