import { resolve } from 'node:path';
import type { InstanceStore } from '../service/index.js';
import { asServiceStore } from '../service/service-store.js';
import type { Store } from '../core/store.js';
import { openStore } from '../store/open-store.js';
import { printableUrl, REDIS_STORE_DEFAULTS } from '../store/redis/index.js';
import type { Env, ServeOptions } from './options.js';

/** `--redis-url`, else STEPWISE_REDIS_URL, else the store's default. */
export function redisUrlOf(options: ServeOptions, env: Env): string {
  return options.redisUrl ?? (env['STEPWISE_REDIS_URL'] || REDIS_STORE_DEFAULTS.url);
}

const retentionOf = ({ maxFramesPerConversation }: ServeOptions): { maxFramesPerConversation?: number } =>
  maxFramesPerConversation === undefined ? {} : { maxFramesPerConversation };

/** `--store`, `--data-dir` and `--redis-url` (or STEPWISE_REDIS_URL), said in the CLI's words. */
export function openServerStore(options: ServeOptions, env: Env): Store {
  if (options.store === 'redis') {
    const redisUrl = redisUrlOf(options, env);
    // An unreachable Redis fails the first read (recovery, below): exit 1 with a StoreUnavailableError.
    const store = openStore({ kind: 'redis', redisUrl, ...retentionOf(options) }) as InstanceStore;
    console.log(`store: redis at ${printableUrl(redisUrl)}`);
    // Shared by every instance of the service (docs/protocol.md, Several instances): a runtime on it joins the service.
    return asServiceStore(store, { leaseMs: options.leaseMs, log: (line: string) => console.log(line) });
  }
  const store = openStore({ kind: options.store, dataDir: options.dataDir, ...retentionOf(options) });
  console.log(store.durable ? `store: ${options.store} in ${resolve(options.dataDir)}` : `store: ${options.store} (nothing survives a restart)`);
  return store;
}
