import type { Redis } from 'ioredis';
import { Observable } from 'rxjs';
import type { FrameEvent, FramePage, Store, StoredFrame, StoredPause, StoreRetentionConfig } from '../../core/store.js';
import { LeaseLostError, StoreClosedError } from '../../core/store-errors.js';
import { resolveRetention } from '../retention.js';
import { queuedWrites, type WriteOp } from '../write-ops.js';
import { createWriteQueue, type WriteQueue } from '../write-queue.js';
import { createRedisAppends } from './appends.js';
import { createBatchCommit } from './batch-commit.js';
import { createConnection } from './connection.js';
import { createFencing, type Fencing, type StoreFence } from './fencing.js';
import { createRedisGrants } from './grants.js';
import { createRedisKeys, DEFAULT_KEY_PREFIX, type RedisKeys } from './keys.js';
import { createPauseDeadlineReads, type PausePage } from './pause-deadlines.js';
import { committedOrDown, readAfter, type ReadAfter } from './read-after-commit.js';
import { createRedisReads, type RedisReads } from './reads.js';
import { defineScripts } from './scripts.js';
import { createFrameTail } from './tail.js';

export type { StoreFence } from './fencing.js';

export interface RedisStoreConfig extends StoreRetentionConfig {
  /** `redis://[user:password@]host:port[/db]`. Default `redis://127.0.0.1:6379`. */
  readonly url?: string;
  /** Prefix of every key, so several services or tests can share one Redis. Default `stepwise:`. */
  readonly keyPrefix?: string;
  /** Wait between attempts to commit a batch while Redis is unreachable, ms. Default 200. */
  readonly retryMs?: number;
  /** Longest wait between reconnection attempts, ms. Default 1000. */
  readonly reconnectMaxMs?: number;
  /** A command without a reply after this long counts as Redis being unreachable, ms. Default 5000. */
  readonly commandTimeoutMs?: number;
  /** How long `close()` waits for queued writes while Redis is unreachable before dropping them, ms. Default 2000. */
  readonly closeTimeoutMs?: number;
  /** How long one blocking read of a `tail$` waits before it asks again, ms. Default 5000. */
  readonly tailBlockMs?: number;
}

export const REDIS_STORE_DEFAULTS = Object.freeze({
  url: 'redis://127.0.0.1:6379',
  keyPrefix: DEFAULT_KEY_PREFIX,
  retryMs: 200,
  reconnectMaxMs: 1000,
  commandTimeoutMs: 5000,
  closeTimeoutMs: 2000,
  tailBlockMs: 5000,
});

/** The Redis store: the port, plus what several instances on one Redis need. */
export interface RedisStore<E extends FrameEvent = FrameEvent, W = never> extends Store<E, W> {
  /**
   * A conversation's frames with seq > `sinceSeq` (default 0), oldest first, then every frame
   * appended after, by any instance on this Redis, each once and in seq order, until unsubscribed.
   * It reads the stream on a connection of its own (XREAD BLOCK) and picks up where it was after
   * Redis comes back. It never errors for unavailability; a frame that is not JSON errors it.
   */
  tail$(convId: string, sinceSeq?: number): Observable<StoredFrame<E> | W>;
  /** One pending pause of any instance by id. */
  pause(pauseId: string): Promise<StoredPause | undefined>;
  /**
   * The conversation of any pause made, pending or resolved (a command about it finds the run's owner
   * by it). Read at once, not after this instance's queued writes: a pause never changes conversation,
   * and one this instance made and has not committed yet is its controller's, which a command asks first.
   */
  convOfPause(pauseId: string): Promise<string | undefined>;
  /** The conversations with an unfinished run: one per stored checkpoint, also one that cannot be read back. */
  unfinished(): Promise<string[]>;
  /** The service's pending pauses `offset` to `offset + count - 1`, soonest deadline first (ties: by pause id). */
  pausesByDeadline(offset: number, count: number): Promise<PausePage>;
  /** The key layout (for leases and command channels built beside the store). */
  readonly keys: RedisKeys;
  /** False while Redis is unreachable. */
  isAvailable(): boolean;
  /**
   * Another connection to this store's Redis, with its settings and error policy (a heartbeat or a
   * subscriber must not wait behind the store's commands). Closed by its taker.
   */
  connect(): Redis;
  /**
   * Fences this store's writes from now on (docs/protocol.md, Several instances: two instances never
   * both run one run): a run's appends, turns, pauses, decisions and checkpoints carry the token
   * `fence.tokenOf` gives for their conversation (undefined: this instance holds none) and are refused
   * unless its lease (`keys.conversation(id).lease`) holds exactly that token. `fence.onRefused` hears
   * of each conversation whose write was refused, before anyone waiting on that write does.
   * Unfenced (no call), writes are never refused for a lease.
   */
  fence(fence: StoreFence): void;
}

/**
 * The Redis store (ioredis), for `serve --store redis`: see ./index.ts for the data layout. Writes
 * are queued and committed as one MULTI per batch (everything queued in one tick). While Redis is
 * unreachable the batches wait and are sent again, in order, when it is back, so runs go on in
 * memory; reads and `flush()` fail meanwhile with `StoreUnavailableError`.
 */
export function createRedisStore<E extends FrameEvent = FrameEvent, W = never>(config: RedisStoreConfig = {}): RedisStore<E, W> {
  const settings = checkSettings(config);
  const retention = resolveRetention(config, 'createRedisStore');
  const keys = createRedisKeys(settings.keyPrefix);
  const connection = createConnection({ url: settings.url, reconnectMaxMs: settings.reconnectMaxMs, commandTimeoutMs: settings.commandTimeoutMs });
  const { client } = connection;
  defineScripts(client);
  const tail = createFrameTail<E>(connection, keys, settings);
  const byDeadline = createPauseDeadlineReads(client, keys);
  const appends = createRedisAppends<E>();
  const fencing = createFencing(appends.unknown);
  const batches = createBatchCommit({ connection, keys, retention, retryMs: settings.retryMs, tokenOf: fencing.tokenOf, appends, refused: fencing.refused });
  const queue = createWriteQueue<WriteOp>({ commit: batches.commit });
  let closed = false;
  const push = (op: WriteOp): void => {
    if (closed) throw new StoreClosedError('redis');
    queue.push(op);
  };
  const committed = (): Promise<void> => committedOrDown(connection, queue);
  const read = readAfter(committed, connection);

  return {
    kind: 'redis',
    durable: true,
    grants: createRedisGrants(client, keys.prefix, read),
    keys,
    fence: fencing.fence,
    isAvailable: () => !connection.isDown() && client.status === 'ready',
    connect: () => connection.duplicate(),
    ...queuedWrites(push),
    appendFrames: (frames) => {
      if (closed) throw new StoreClosedError('redis');
      return appends.append(frames, (op) => queue.push(op));
    },
    deleteConversation: (conv_id) => {
      push({ kind: 'conversation-deleted', conv_id });
      // A conversation created again under the same id starts a new log.
      appends.follow(conv_id, 0);
    },
    flush: committed,
    committed$: (convId) => committedWhileOwned$(queue, fencing, convId),
    ...readsAfterCommit<E, W>(createRedisReads<E>(client, keys), read),
    pausesByDeadline: (offset, count) => read(() => byDeadline.page(offset, count)),
    // A missing last seq only means the append script checks the seq alone (see ./appends.ts).
    forget: (convId) => appends.unknown(convId),
    tail$: tail as (convId: string, sinceSeq?: number) => Observable<StoredFrame<E> | W>,
    close: async () => {
      if (closed) return;
      closed = true;
      await closeWithin(settings.closeTimeoutMs, queue);
      batches.giveUp();
      tail.closeAll();
      client.disconnect();
    },
  };
}

/** Queued writes get a bounded chance to commit: SIGTERM must end in time even with Redis gone. */
async function closeWithin(ms: number, queue: Pick<WriteQueue<WriteOp>, 'commitNow' | 'flush'>): Promise<void> {
  queue.commitNow();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((done) => (timer = setTimeout(done, ms)));
  await Promise.race([queue.flush().catch(() => undefined), timeout]);
  clearTimeout(timer);
}

/** The config with its defaults, checked: a bad option fails here, naming it. */
function checkSettings(config: RedisStoreConfig) {
  const settings = { ...REDIS_STORE_DEFAULTS, ...definedOnly(config) };
  for (const name of ['retryMs', 'reconnectMaxMs', 'commandTimeoutMs', 'closeTimeoutMs', 'tailBlockMs'] as const) {
    const value = settings[name];
    if (!(Number.isInteger(value) && value >= 0)) throw new RangeError(`createRedisStore: ${name} must be an integer >= 0, got ${String(value)}`);
  }
  if (!/^rediss?:\/\//.test(settings.url)) throw new TypeError(`createRedisStore: url must start with redis:// or rediss://, got "${settings.url}"`);
  return settings;
}

/** Completes once what is queued is committed, or errors with `LeaseLostError` when by then the run is not this instance's. */
function committedWhileOwned$(queue: { committed(): Observable<never> }, fencing: Fencing, convId: string): Observable<never> {
  return new Observable<never>((subscriber) =>
    queue.committed().subscribe({
      error: (error: unknown) => subscriber.error(error),
      complete: () => (fencing.lost(convId) ? subscriber.error(new LeaseLostError(convId)) : subscriber.complete()),
    }),
  );
}

/** The store's reads, each after the writes queued before it. */
function readsAfterCommit<E extends FrameEvent, W>(
  reads: RedisReads<E>,
  read: ReadAfter,
): Pick<RedisStore<E, W>, keyof RedisReads<E>> {
  return {
    load: (convId) => read(() => reads.load(convId)),
    conversation: (convId) => read(() => reads.conversation(convId)),
    conversations: (owner) => read(() => reads.conversations(owner)),
    turns: (convId) => read(() => reads.turns(convId)),
    // `W` is the caller's word for what it appended (WireFrame: frames with their text).
    frames: (convId, query = {}) => read(() => reads.frames(convId, query) as Promise<FramePage<E, W>>),
    lastSeq: (convId) => read(() => reads.lastSeq(convId)),
    pauses: (convId) => read(() => reads.pauses(convId)),
    pause: (pauseId) => read(() => reads.pause(pauseId)),
    convOfPause: (pauseId) => read(() => reads.convOfPause(pauseId), false),
    decisions: (convId) => read(() => reads.decisions(convId)),
    checkpoints: (convId) => read(() => reads.checkpoints(convId)),
    unfinished: () => read(() => reads.unfinished()),
    engineState: (convId) => read(() => reads.engineState(convId)),
  };
}

/** The config without its undefined fields, so they do not hide the defaults. */
function definedOnly<T extends object>(config: T): Partial<T> {
  return Object.fromEntries(Object.entries(config).filter(([, value]) => value !== undefined)) as Partial<T>;
}
