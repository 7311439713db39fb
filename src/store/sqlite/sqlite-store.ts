import { type FrameEvent, type FramePage, type Store, type StoreRetentionConfig, type StoreSnapshot } from '../../core/store.js';
import { StoreClosedError, StoreUnreadableError } from '../../core/store-errors.js';
import { resolveRetention, type Retention } from '../retention.js';
import { isCorrupt } from './check-file.js';
import { createSqliteGrants } from './grants.js';
import { openDatabase } from './open-database.js';
import type { DriverOptions } from './store-file.js';
import { createStoreReads, type StoreReads } from './reads.js';
import type { QueuedSeqs } from './queued-seqs.js';
import { createSqliteWritePath } from './write-path.js';

export { STORE_FILE } from './store-file.js';

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
  const { synchronous, retention, driver } = checkConfig(config);
  const { db, file, lockFile } = openDatabase(config.dataDir, driver, synchronous);
  const reads = createStoreReads<E>(db);
  const { commitNow, seqs, forget, isClosed, close, ...writes } = createSqliteWritePath<E>(db, retention, reads.lastSeq);

  /**
   * Every read sees the writes queued before it: commit them first (synchronous here). A page that
   * turns out corrupt (the open check reads only the header and schema) is a `StoreUnreadableError`.
   */
  const read = <T>(query: () => T): Promise<T> => {
    try {
      commitNow();
      return Promise.resolve(query());
    } catch (error) {
      return Promise.reject(isCorrupt(error) ? new StoreUnreadableError(file, `it is corrupt: ${(error as Error).message}`) : (error as Error));
    }
  };
  /** A read answered at once, for what cannot wait for a Promise (a seq to publish with, a hibernated run's wake). */
  const now = <T>(query: () => T): T => {
    if (isClosed()) throw new StoreClosedError('sqlite');
    return query();
  };

  return {
    kind: 'sqlite',
    durable: true,
    grants: createSqliteGrants(db),
    ...writes,
    load: (convId) => read(() => loadWithSeqs(reads, seqs, convId)),
    conversation: (convId) => read(() => reads.conversation(convId)),
    conversations: (owner) => read(() => reads.conversations(owner)),
    turns: (convId) => read(() => reads.turns(convId)),
    // `W` is the caller's word for what it appended (WireFrame: frames with their text).
    frames: (convId, query = {}) => read(() => reads.frames(convId, query) as FramePage<E, W>),
    lastSeq: (convId) => read(() => reads.lastSeq(convId)),
    lastSeqNow: (convId) => now(() => seqs.lastSeqOf(convId)),
    // What is queued is committed first, as for every read.
    checkpointNow: (convId, inferenceId) => now(() => (commitNow(), reads.checkpoint(convId, inferenceId))),
    forget: (convId) => {
      if (!isClosed()) forget(convId);
    },
    pauses: (convId) => read(() => reads.pauses(convId)),
    decisions: (convId) => read(() => reads.decisions(convId)),
    checkpoints: (convId) => read(() => reads.checkpoints(convId)),
    engineState: (convId) => read(() => reads.engineState(convId)),
    close: async () => {
      if (isClosed()) return;
      try {
        close();
      } finally {
        db.close();
        lockFile.release();
      }
    },
  };
}

/**
 * Every stored conversation and what recovery needs. The snapshot has every last seq: the appends that
 * follow a restart (a "resumed" frame per run restored) check against it instead of one query per
 * conversation.
 */
function loadWithSeqs<E extends FrameEvent>(reads: StoreReads<E>, seqs: QueuedSeqs, convId: string | undefined): StoreSnapshot {
  const snapshot = reads.load(convId);
  for (const { conv_id, last_seq } of snapshot.conversations) seqs.set(conv_id, last_seq, true);
  return snapshot;
}

/** The config's options, checked (a bad one fails here, naming it), with their defaults. */
function checkConfig(config: SqliteStoreConfig): { synchronous: 'normal' | 'full'; retention: Retention; driver: DriverOptions } {
  if (typeof config.dataDir !== 'string' || config.dataDir === '') {
    throw new TypeError('createSqliteStore: dataDir must be a non-empty path');
  }
  const synchronous = config.synchronous ?? 'normal';
  if (synchronous !== 'normal' && synchronous !== 'full') {
    throw new RangeError(`createSqliteStore: synchronous must be "normal" or "full", got "${String(synchronous)}"`);
  }
  const retention = resolveRetention(config, 'createSqliteStore');
  const driver = config.nativeBinding === undefined ? {} : { nativeBinding: config.nativeBinding };
  return { synchronous, retention, driver };
}
