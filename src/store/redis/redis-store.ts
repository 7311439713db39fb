import { AsyncSubject, Observable, throwError } from 'rxjs';
import type { FrameEvent, FramePage, Store, StoredFrame, StoredPause, StoreRetentionConfig } from '../../core/store.js';
import { LeaseLostError, StoreClosedError, StoreSequenceError } from '../../core/store-errors.js';
import { continueSequences } from '../frame-sequence.js';
import { createGiveUp } from '../give-up.js';
import { resolveRetention } from '../retention.js';
import type { WriteOp } from '../write-ops.js';
import { createWriteQueue } from '../write-queue.js';
import { createConnection } from './connection.js';
import { createRedisGrants } from './grants.js';
import { createRedisKeys, DEFAULT_KEY_PREFIX, type RedisKeys } from './keys.js';
import { createRedisReads } from './reads.js';
import { defineScripts } from './scripts.js';
import { createFrameTail } from './tail.js';
import { appendRefusal, appendReply, queueBatch, type QueuedAppend } from './writes.js';

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
  /** The conversation of any pause made, pending or resolved (a command about it finds the run's owner by it). */
  convOfPause(pauseId: string): Promise<string | undefined>;
  /** The key layout (for leases and command channels built beside the store). */
  readonly keys: RedisKeys;
  /** False while Redis is unreachable. */
  isAvailable(): boolean;
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

/** How an instance of a service fences its writes (see `RedisStore.fence`). */
export interface StoreFence {
  readonly tokenOf: (convId: string) => string | undefined;
  readonly onRefused: (convId: string) => void;
}

/** A token no lease ever holds: a fenced write of a conversation this instance does not own. */
const NOT_OWNED = '-';

/**
 * The Redis store (ioredis), for `serve --store redis`: see ./index.ts for the data layout. Writes
 * are queued and committed as one MULTI per batch (everything queued in one tick). While Redis is
 * unreachable the batches wait and are sent again, in order, when it is back, so runs go on in
 * memory; reads and `flush()` fail meanwhile with `StoreUnavailableError`.
 */
export function createRedisStore<E extends FrameEvent = FrameEvent, W = never>(config: RedisStoreConfig = {}): RedisStore<E, W> {
  const settings = { ...REDIS_STORE_DEFAULTS, ...definedOnly(config) };
  for (const name of ['retryMs', 'reconnectMaxMs', 'commandTimeoutMs', 'closeTimeoutMs', 'tailBlockMs'] as const) {
    const value = settings[name];
    if (!(Number.isInteger(value) && value >= 0)) throw new RangeError(`createRedisStore: ${name} must be an integer >= 0, got ${String(value)}`);
  }
  if (!/^rediss?:\/\//.test(settings.url)) throw new TypeError(`createRedisStore: url must start with redis:// or rediss://, got "${settings.url}"`);
  const retention = resolveRetention(config, 'createRedisStore');
  const keys = createRedisKeys(settings.keyPrefix);
  const connection = createConnection({ url: settings.url, reconnectMaxMs: settings.reconnectMaxMs, commandTimeoutMs: settings.commandTimeoutMs });
  const { client } = connection;
  defineScripts(client);
  const reads = createRedisReads<E>(client, keys);
  const tail = createFrameTail<E>(connection, keys, settings);

  // Each append's own outcome: a refused seq fails that append only, not its batch.
  const outcomes = new Map<object, AsyncSubject<never>>();
  // Each conversation's last seq as this instance knows it: an append that does not follow it is
  // refused at once. Redis checks again (another instance may have appended), so a missing entry
  // only means the check happens there.
  const lastSeqs = new Map<string, number>();
  let closed = false;
  let givingUp = false;
  // Until `fence`: every token '', so the scripts read no lease.
  let fence: StoreFence | undefined;
  const tokenOf = (convId: string): string => (fence ? (fence.tokenOf(convId) ?? NOT_OWNED) : '');
  const refuse = (convId: string): void => {
    lastSeqs.delete(convId);
    fence?.onRefused(convId);
  };
  // Given up when close() stops waiting: a commit attempt parked in ioredis's offline queue ends then.
  const attempts = createGiveUp();

  const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

  /** One MULTI for the batch; sent again while Redis is unreachable (marked as a retry). */
  const commit = async (ops: readonly WriteOp[]): Promise<void> => {
    for (let retry = false; ; retry = true) {
      const multi = client.multi();
      const { appends, fenced } = queueBatch(multi, keys, retention, ops, retry, tokenOf);
      try {
        const replies = (await attempts.race(multi.exec())) ?? [];
        // Told before any waiter settles: the run stops before its operator hears of the refusal.
        for (const write of fenced) if (replies[write.reply]?.[1] === 1) refuse(write.conv_id);
        for (const append of appends) {
          const [, value] = appendReply(append, replies);
          const refusal = appendRefusal(append, value);
          if (refusal instanceof LeaseLostError) refuse(refusal.conv_id);
        }
        for (const append of appends) {
          const [error, value] = appendReply(append, replies);
          const refusal = error ?? appendRefusal(append, value);
          if (refusal) forget(append);
          // Redis knows better (another instance may have appended): follow its log from now on.
          if (refusal instanceof StoreSequenceError) lastSeqs.set(refusal.conv_id, refusal.expected - 1);
          settle(append.op, refusal ?? undefined);
        }
        const failed = replies.find(([error], index) => error && !appends.some((append) => append.reply === index));
        if (failed?.[0]) throw failed[0];
        return;
      } catch (error) {
        const storeError = connection.toStoreError(error);
        if (storeError === error || givingUp) {
          for (const append of appends) {
            forget(append);
            settle(append.op, storeError);
          }
          throw storeError;
        }
        await sleep(settings.retryMs);
      }
    }
  };
  /** An append that was not written advanced the seqs it was checked against: let Redis check the next. */
  const forget = (append: QueuedAppend): void => {
    for (const [convId] of append.convs) lastSeqs.delete(convId);
  };
  const settle = (op: object, error: unknown): void => {
    const outcome = outcomes.get(op);
    if (!outcome) return;
    outcomes.delete(op);
    if (error === undefined) outcome.complete();
    else outcome.error(error);
  };
  const queue = createWriteQueue<WriteOp>({ commit });

  const push = (op: WriteOp): void => {
    if (closed) throw new StoreClosedError('redis');
    queue.push(op);
  };

  /**
   * Resolves once what is queued is committed; fails at once while Redis is unreachable (the writes
   * stay queued), so a read never waits on a reconnect.
   */
  const committed = (): Promise<void> => {
    queue.commitNow();
    if (connection.isDown()) return Promise.reject(connection.unavailable());
    return new Promise((resolve, reject) => {
      const stop = connection.onDown(reject);
      queue.flush().then(resolve, reject).finally(stop);
    });
  };
  /** Every read sees the writes queued before it, then asks Redis. */
  const read = async <T>(query: () => Promise<T>): Promise<T> => {
    await committed();
    try {
      return await query();
    } catch (error) {
      throw connection.toStoreError(error);
    }
  };

  const appendFrames = (frames: readonly StoredFrame<E>[]): Observable<never> => {
    if (closed) throw new StoreClosedError('redis');
    const last = continueSequences(frames, (convId) => lastSeqs.get(convId) ?? (frames.find((frame) => frame.event.conv_id === convId)?.seq ?? 1) - 1);
    if (last instanceof Error) return throwError(() => last);
    for (const [convId, seq] of last) lastSeqs.set(convId, seq);
    const op: WriteOp = { kind: 'frames', frames };
    const outcome = new AsyncSubject<never>();
    if (frames.length === 0) outcome.complete();
    else {
      outcomes.set(op, outcome);
      queue.push(op);
    }
    return outcome.asObservable();
  };

  return {
    kind: 'redis',
    durable: true,
    grants: createRedisGrants(client, keys.prefix, read),
    keys,
    fence: (given) => {
      fence = given;
    },
    isAvailable: () => !connection.isDown() && client.status === 'ready',
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
    flush: committed,
    committed$: (convId) =>
      new Observable<never>((subscriber) =>
        queue.committed().subscribe({
          error: (error: unknown) => subscriber.error(error),
          complete: () => (fence && fence.tokenOf(convId) === undefined ? subscriber.error(new LeaseLostError(convId)) : subscriber.complete()),
        }),
      ),
    load: () => read(() => reads.load()),
    conversation: (convId) => read(() => reads.conversation(convId)),
    conversations: (owner) => read(() => reads.conversations(owner)),
    turns: (convId) => read(() => reads.turns(convId)),
    // `W` is the caller's word for what it appended (WireFrame: frames with their text).
    frames: (convId, query = {}) => read(() => reads.frames(convId, query) as Promise<FramePage<E, W>>),
    lastSeq: (convId) => read(() => reads.lastSeq(convId)),
    // A missing entry only means the append script checks the seq alone (see `lastSeqs`).
    closed: (convId) => void lastSeqs.delete(convId),
    pauses: (convId) => read(() => reads.pauses(convId)),
    pause: (pauseId) => read(() => reads.pause(pauseId)),
    convOfPause: (pauseId) => read(() => reads.convOfPause(pauseId)),
    decisions: (convId) => read(() => reads.decisions(convId)),
    checkpoints: (convId) => read(() => reads.checkpoints(convId)),
    engineState: (convId) => read(() => reads.engineState(convId)),
    tail$: tail as (convId: string, sinceSeq?: number) => Observable<StoredFrame<E> | W>,
    close: async () => {
      if (closed) return;
      closed = true;
      queue.commitNow();
      // Queued writes get a bounded chance to commit: SIGTERM must end within 5 s even with Redis gone.
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((done) => (timer = setTimeout(done, settings.closeTimeoutMs)));
      await Promise.race([queue.flush().catch(() => undefined), timeout]);
      clearTimeout(timer);
      givingUp = true;
      attempts.giveUp(connection.unavailable('the store was closed before Redis came back'));
      tail.closeAll();
      client.disconnect();
    },
  };
}

/** The config without its undefined fields, so they do not hide the defaults. */
function definedOnly<T extends object>(config: T): Partial<T> {
  return Object.fromEntries(Object.entries(config).filter(([, value]) => value !== undefined)) as Partial<T>;
}
