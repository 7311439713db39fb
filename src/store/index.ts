/**
 * The store adapters as a program makes them for `createStepwise({ store })` (docs/library.md, Durable runs),
 * with the defaults `stepwise serve --store KIND` uses (./open-store.ts). The adapters' own factories stay
 * as the CLI and tests call them; these are the package's names and options for them.
 *
 * None of them costs the import: better-sqlite3 loads when a SQLite store is opened and ioredis when a
 * Redis store is (docs/library.md, A light import).
 */
import type { FrameEvent, Store, StoreRetentionConfig } from '../core/store.js';
import { createMemoryStore as createMemoryAdapter } from './memory.js';
import { DEFAULT_MEMORY_FRAMES_PER_CONVERSATION } from './memory-retention.js';
import { createRequire } from 'node:module';
import type { RedisStore, RedisStoreConfig } from './redis/redis-store.js';
import type { SqliteStoreConfig } from './sqlite/sqlite-store.js';

// The adapters' modules (their writes, reads and scripts) load when a store is made, not with the package:
// ES modules without top-level await, which Node's `require` loads synchronously.
const load = createRequire(import.meta.url);
const sqliteAdapter = (): typeof import('./sqlite/sqlite-store.js') => load('./sqlite/sqlite-store.js') as typeof import('./sqlite/sqlite-store.js');
const redisAdapter = (): typeof import('./redis/redis-store.js') => load('./redis/redis-store.js') as typeof import('./redis/redis-store.js');

export type MemoryStoreOptions = StoreRetentionConfig;

/**
 * A store that keeps everything in this process: nothing survives it, and `recover()` finds nothing.
 * `maxFramesPerConversation` defaults to 1000, as `serve --store memory`, so a long-lived program's
 * memory does not grow with every frame of every conversation.
 */
export function createMemoryStore<E extends FrameEvent = FrameEvent>(options: MemoryStoreOptions = {}): Store<E> {
  return createMemoryAdapter<E>({ maxFramesPerConversation: DEFAULT_MEMORY_FRAMES_PER_CONVERSATION, ...definedOnly(options) });
}

export interface SqliteStoreOptions extends Omit<SqliteStoreConfig, 'dataDir'> {
  /**
   * The store's directory, created when missing: it holds `stepwise.db` and the lock file naming the
   * process that has it open. The same as `stepwise serve --data-dir`. Required.
   */
  readonly path: string;
}

/**
 * A durable store in a SQLite file (docs/protocol.md, Durability): a committed write survives `kill -9`, and
 * the next process's `recover()` brings back every conversation and paused run. One process per
 * directory: throws `StoreLockedError` while another holds it, `StoreUnreadableError` when the file is
 * not a stepwise store. Close it (`await store.close()`) after `dispose()` or `suspend()`.
 */
export function createSqliteStore<E extends FrameEvent = FrameEvent>(options: SqliteStoreOptions): Store<E> {
  if (typeof options?.path !== 'string' || options.path === '') {
    throw new TypeError('createSqliteStore: path must be a non-empty path (the store\'s directory)');
  }
  const { path, ...rest } = options;
  return sqliteAdapter().createSqliteStore<E>({ ...rest, dataDir: path });
}

export type RedisStoreOptions = RedisStoreConfig;

/**
 * A durable store on Redis, which every instance of a service can share (docs/protocol.md, Several
 * instances). It connects in the background: an unreachable Redis makes the first read (`recover()`)
 * fail with `StoreUnavailableError`. `url` defaults to `redis://127.0.0.1:6379`, `keyPrefix` to
 * `stepwise:`. The store alone: the service a runtime on it joins is chosen where the service is
 * assembled (src/service/service-store.ts, the package's `createRedisStore`; the CLI's `serve`).
 */
export function createRedisStore<E extends FrameEvent = FrameEvent>(options: RedisStoreOptions = {}): RedisStore<E> {
  return redisAdapter().createRedisStore<E>(options);
}

/** An option given as `undefined` means "the default", as everywhere else in the package. */
function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>;
}
