/**
 * Where a Redis store becomes the store of a service (docs/protocol.md, Several instances): a runtime
 * made on it (`createStepwise({ store })`) joins the service as one instance of it, its runs held by
 * lease, fenced and taken over as `stepwise serve --store redis`'s are. The store itself knows nothing
 * of the service: the service is chosen here, where it is assembled, as the CLI does (src/cli/server-store.ts).
 */
import type { FrameEvent } from '../core/store.js';
import type { Stepwise } from '../sessions/runtime.js';
import type { ServiceStore } from '../sessions/service.js';
import { createRedisStore as createRedisAdapter, type RedisStoreOptions as RedisAdapterOptions } from '../store/index.js';
import type { RedisStore } from '../store/redis/redis-store.js';
import { joinService, type InstanceConfig, type InstanceStore } from './index.js';

/** The Redis store as the store of a service: a runtime made on it joins the service as one instance of it. */
export function asServiceStore<S extends InstanceStore>(store: S, config: Omit<InstanceConfig, 'store'>): S & ServiceStore {
  return Object.assign(store, { joinService: (base: Stepwise) => joinService(base, { ...config, store }) });
}

export interface RedisStoreOptions extends RedisAdapterOptions {
  /**
   * How long an instance of the service lives without renewing its heartbeat, ms (`serve --lease-ms`):
   * after that its runs are taken over by another instance. Default 5000.
   */
  readonly leaseMs?: number;
  /** Where takeovers and lost runs are told. Default: nowhere. */
  readonly log?: (line: string) => void;
}

/**
 * A durable store on Redis, shared by every instance of a service (the package's `createRedisStore`,
 * docs/library.md, Durable runs). It connects in the background: an unreachable Redis makes the first
 * read (`recover()`) fail with `StoreUnavailableError`. `url` defaults to `redis://127.0.0.1:6379`,
 * `keyPrefix` to `stepwise:`.
 */
export function createRedisStore<E extends FrameEvent = FrameEvent>(options: RedisStoreOptions = {}): RedisStore<E> & ServiceStore {
  const { leaseMs, log, ...config } = options;
  const service = {
    ...(leaseMs === undefined ? {} : { leaseMs }),
    ...(log === undefined ? {} : { log }),
  };
  return asServiceStore(createRedisAdapter<E>(config), service);
}
