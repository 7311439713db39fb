import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { throwError, type Observable } from 'rxjs';
import { type FrameEvent, type FramePage, type Store, type StoredFrame, type StoreRetentionConfig } from '../../core/store.js';
import { StoreClosedError, StoreError, StoreLockedError, StoreSequenceError, StoreUnreadableError } from '../../core/store-errors.js';
import { continueSequences } from '../frame-sequence.js';
import { resolveRetention } from '../retention.js';
import { createFirstInTurn } from '../first-in-turn.js';
import { createWriteQueue } from '../write-queue.js';
import { checkStoreFile, FileBusyError, isBusy, isCorrupt } from './check-file.js';
import { loadDriver } from './driver.js';
import { createLockFile } from './lock-file.js';
import { migrate } from './migrations.js';
import { createSqliteGrants } from './grants.js';
import { createStoreReads } from './reads.js';
import type { WriteOp } from '../write-ops.js';
import { createBatchWriter } from './writes.js';

export interface SqliteStoreConfig extends StoreRetentionConfig {
  /** The data dir (created when missing); the store is `stepwise.db` in it. Required. */
  readonly dataDir: string;
  /**
   * `normal` (default): a committed batch survives a crash of the process (`kill -9`), which is
   * what docs/protocol.md, Durability promises, at no fsync per batch. `full`: it also survives a power cut, for an
   * fsync per batch.
   */
  readonly synchronous?: 'normal' | 'full';
  /**
   * Path of better-sqlite3's compiled addon (`better_sqlite3.node`), for bundled apps that move it;
   * default: where `npm install` built it.
   */
  readonly nativeBinding?: string;
}

/** The database file in a data dir. */
export const STORE_FILE = 'stepwise.db';

/**
 * The SQLite store (`better-sqlite3`): WAL, prepared statements, writes committed in one transaction
 * per batch (everything queued during one tick of the event loop), so the loop never waits on a
 * disk write per event. One process per data dir: the database is held with an exclusive lock for
 * the store's life, and `stepwise.lock` names the holding pid.
 *
 * Throws `StoreLockedError` when another store holds the dir, and `StoreUnreadableError` (leaving
 * the file as it was) when the file is not a stepwise store it can read.
 */
export function createSqliteStore<E extends FrameEvent = FrameEvent, W = never>(config: SqliteStoreConfig): Store<E, W> {
  if (typeof config.dataDir !== 'string' || config.dataDir === '') {
    throw new TypeError('createSqliteStore: dataDir must be a non-empty path');
  }
  const synchronous = config.synchronous ?? 'normal';
  if (synchronous !== 'normal' && synchronous !== 'full') {
    throw new RangeError(`createSqliteStore: synchronous must be "normal" or "full", got "${String(synchronous)}"`);
  }
  const retention = resolveRetention(config, 'createSqliteStore');
  const driver = config.nativeBinding === undefined ? {} : { nativeBinding: config.nativeBinding };
  checkDriver(driver);
  const dir = resolve(config.dataDir);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, STORE_FILE);
  const lockFile = createLockFile(dir);
  const locked = (): StoreLockedError => new StoreLockedError(dir, lockFile.liveHolder());

  try {
    checkStoreFile(file, driver);
  } catch (error) {
    throw error instanceof FileBusyError ? locked() : error;
  }
  const db = openExclusive(file, { ...driver, synchronous }, locked);
  // The read-only check may have left a shared-memory file; an exclusive WAL connection uses none,
  // and no other can open the file while we hold it.
  rmSync(`${file}-shm`, { force: true });
  lockFile.claim();

  const reads = createStoreReads<E>(db);
  const write = createBatchWriter(db, retention);
  // Each conversation's last seq, advanced when frames are queued, so the next append is checked
  // against what is queued, not only what is committed.
  const lastSeqs = new Map<string, number>();
  const firstInTurn = createFirstInTurn();
  const queue = createWriteQueue<WriteOp>({
    commit: (ops) => {
      try {
        write(ops);
      } catch (error) {
        // The batch rolled back: its frames are not there, so the queued seqs are not either.
        lastSeqs.clear();
        throw error;
      }
    },
  });
  let closed = false;

  const push = (op: WriteOp): void => {
    if (closed) throw new StoreClosedError('sqlite');
    queue.push(op);
  };
  /**
   * Every read sees the writes queued before it: commit them first (synchronous here). A page that
   * turns out corrupt (the open check reads only the header and schema) is a `StoreUnreadableError`.
   */
  const read = <T>(query: () => T): Promise<T> => {
    try {
      queue.commitNow();
      return Promise.resolve(query());
    } catch (error) {
      return Promise.reject(isCorrupt(error) ? new StoreUnreadableError(file, `it is corrupt: ${(error as Error).message}`) : (error as Error));
    }
  };
  const lastSeqOf = (convId: string): number => {
    let seq = lastSeqs.get(convId);
    if (seq === undefined) lastSeqs.set(convId, (seq = reads.lastSeq(convId)));
    return seq;
  };

  const appendFrames = (frames: readonly StoredFrame<E>[]): Observable<never> => {
    if (closed) throw new StoreClosedError('sqlite');
    // The server's frame log appends one frame at a time (380 a loop_step_sqlite batch): that case
    // checks its seq without building a map of last seqs (loop_step_sqlite -2% in an A/B run).
    const only = frames.length === 1 ? frames[0] : undefined;
    if (only) {
      const convId = only.event.conv_id;
      const expected = lastSeqOf(convId) + 1;
      if (only.seq !== expected) return throwError(() => new StoreSequenceError(convId, expected, only.seq));
      lastSeqs.set(convId, only.seq);
    } else {
      const last = continueSequences(frames, lastSeqOf);
      if (last instanceof Error) return throwError(() => last);
      for (const [convId, seq] of last) lastSeqs.set(convId, seq);
    }
    if (frames.length > 0) queue.push({ kind: 'frames', frames });
    return queue.committed();
  };

  return {
    kind: 'sqlite',
    durable: true,
    grants: createSqliteGrants(db),
    putConversation: (record) => push({ kind: 'conversation', record }),
    setStep: (conv_id, step) => push({ kind: 'step', conv_id, step }),
    putTurn: (conv_id, turn) => push({ kind: 'turn', conv_id, turn }),
    appendFrames,
    putPause: (pause) => push({ kind: 'pause', pause }),
    recordDecision: (decision) => push({ kind: 'decision', decision }),
    putCheckpoint: (checkpoint) => push({ kind: 'checkpoint', checkpoint }),
    deleteCheckpoint: (conv_id, inference_id) => push({ kind: 'checkpoint-deleted', conv_id, inference_id }),
    putEngineState: (conv_id, state) => push({ kind: 'engine-state', conv_id, state }),
    deleteConversation: (conv_id) => {
      push({ kind: 'conversation-deleted', conv_id });
      // A conversation created again under the same id starts a new log.
      lastSeqs.set(conv_id, 0);
    },
    // Now rather than at the end of the tick: whoever flushes is waiting for it.
    // The first run waiting in a turn commits now (a synchronous transaction: its tool starts in the same
    // tick); other runs join the turn's batch (first-in-turn.ts: many runs, a transaction each otherwise).
    committed$: (convId) => {
      if (firstInTurn(convId)) queue.commitNow();
      return queue.committed();
    },
    flush: () => {
      queue.commitNow();
      return queue.flush();
    },
    load: () =>
      read(() => {
        const snapshot = reads.load();
        // The snapshot has every last seq: the appends that follow a restart (a "resumed" frame per
        // run, 10 000 at `restart_recover`) check against it instead of one query per conversation.
        for (const { conv_id, last_seq } of snapshot.conversations) if (!lastSeqs.has(conv_id)) lastSeqs.set(conv_id, last_seq);
        return snapshot;
      }),
    conversation: (convId) => read(() => reads.conversation(convId)),
    conversations: (owner) => read(() => reads.conversations(owner)),
    turns: (convId) => read(() => reads.turns(convId)),
    // `W` is the caller's word for what it appended (WireFrame: frames with their text).
    frames: (convId, query = {}) => read(() => reads.frames(convId, query) as FramePage<E, W>),
    lastSeq: (convId) => read(() => reads.lastSeq(convId)),
    lastSeqNow: (convId) => {
      if (closed) throw new StoreClosedError('sqlite');
      return lastSeqOf(convId);
    },
    closed: (convId) => {
      if (closed) return;
      // What is queued of it is committed first: its last seq is then the one stored.
      queue.commitNow();
      lastSeqs.delete(convId);
      write.forget(convId);
    },
    pauses: (convId) => read(() => reads.pauses(convId)),
    decisions: (convId) => read(() => reads.decisions(convId)),
    checkpoints: (convId) => read(() => reads.checkpoints(convId)),
    engineState: (convId) => read(() => reads.engineState(convId)),
    close: async () => {
      if (closed) return;
      closed = true;
      try {
        queue.commitNow();
      } finally {
        db.close();
        lockFile.release();
      }
    },
  };
}

/** What better-sqlite3 is told besides the file. */
interface DriverOptions {
  readonly nativeBinding?: string;
}

/**
 * The driver is a native addon: npm 11 skips building it unless the installing project allows its
 * install script, and then every open would fail with a message about `bindings`. Say what to do.
 */
function checkDriver(driver: DriverOptions): void {
  try {
    new (loadDriver())(':memory:', driver).close();
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new StoreError(
      'store_unavailable',
      `the SQLite store's driver (better-sqlite3) cannot load its native addon: ${reason}. ` +
        'If npm skipped its build, run "npm install-scripts approve better-sqlite3 && npm rebuild better-sqlite3", or start with --store memory',
    );
  }
}

/**
 * Opens the file read-write and takes SQLite's exclusive lock at once (`locking_mode = EXCLUSIVE`
 * keeps it until close; with WAL it also means no shared-memory file), then migrates.
 */
function openExclusive(
  file: string,
  { synchronous, ...driver }: DriverOptions & { readonly synchronous: 'normal' | 'full' },
  locked: () => StoreLockedError,
): Database.Database {
  // timeout 0: a second process is told at once instead of waiting on the holder's lock.
  const Driver = loadDriver();
  const db = new Driver(file, { ...driver, timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // Takes effect only when the file is created. Frame chunks are a few KB: 8 KB pages hold them
    // with less overhead than 4 KB ones (about 1.5x store_append).
    db.pragma('page_size = 8192');
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    // A checkpoint costs two fsyncs whatever its size: one per 32 MB of WAL rather than per 8 MB
    // (SQLite's default of 1000 pages) is about 1.2x store_append.
    db.pragma('wal_autocheckpoint = 4096');
    // An empty exclusive transaction takes the lock that EXCLUSIVE mode then keeps.
    db.exec('BEGIN EXCLUSIVE; COMMIT');
    migrate(db);
    return db;
  } catch (error) {
    db.close();
    throw isBusy(error) ? locked() : error;
  }
}
