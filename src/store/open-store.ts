import type { FrameEvent, Store, StoreRetentionConfig } from '../core/store.js';
import { createMemoryStore } from './memory.js';
import { createRedisStore } from './redis/redis-store.js';
import { createSqliteStore } from './sqlite/sqlite-store.js';

/** The adapters `serve --store` can name. */
export const STORE_KINDS = Object.freeze(['memory', 'sqlite', 'redis'] as const);
export type StoreKind = (typeof STORE_KINDS)[number];

export interface OpenStoreConfig extends StoreRetentionConfig {
  /** Default `sqlite` (docs/protocol.md, Durability). */
  readonly kind?: StoreKind;
  /** For `sqlite`. Default `./.stepwise`, resolved against the working directory. */
  readonly dataDir?: string;
  /** For `redis` (docs/protocol.md, Several instances). Default `redis://127.0.0.1:6379`. */
  readonly redisUrl?: string;
  /** For `redis`: the prefix of every key. Default `stepwise:`. */
  readonly redisKeyPrefix?: string;
}

export const DEFAULT_DATA_DIR = './.stepwise';

import { DEFAULT_MEMORY_FRAMES_PER_CONVERSATION } from './memory-retention.js';

export { DEFAULT_MEMORY_FRAMES_PER_CONVERSATION };

/**
 * The store `serve --store KIND` asks for: one place that maps the flag to an adapter, so the CLI
 * and tests build stores the same way. Throws the adapter's `StoreLockedError` or
 * `StoreUnreadableError` for the CLI to print and exit 1 with; a Redis it cannot reach makes the
 * first read fail with `StoreUnavailableError`.
 */
export function openStore<E extends FrameEvent = FrameEvent>(config: OpenStoreConfig = {}): Store<E> {
  const kind = config.kind ?? 'sqlite';
  const retention = config.maxFramesPerConversation === undefined ? {} : { maxFramesPerConversation: config.maxFramesPerConversation };
  switch (kind) {
    case 'memory':
      return createMemoryStore<E>({ maxFramesPerConversation: DEFAULT_MEMORY_FRAMES_PER_CONVERSATION, ...retention });
    case 'sqlite':
      return createSqliteStore<E>({ dataDir: config.dataDir ?? DEFAULT_DATA_DIR, ...retention });
    case 'redis':
      // Connects in the background: an unreachable Redis shows at the first read (`load()` at start).
      return createRedisStore<E>({ url: config.redisUrl, keyPrefix: config.redisKeyPrefix, ...retention });
    default:
      throw new RangeError(`openStore: kind must be one of ${STORE_KINDS.join(', ')}, got "${String(kind)}"`);
  }
}
