import type { Redis } from 'ioredis';
import { convOfCheckpointField } from '../store/redis/keys.js';
import type { Leases } from './lease.js';

export interface OrphanWatchConfig {
  readonly redis: Redis;
  /** The store's service-wide checkpoint hash: one field per unfinished run, `[conv_id, inference_id]`. */
  readonly checkpointsKey: string;
  readonly leaseKeyOf: (convId: string) => string;
  readonly leases: Leases;
  /** How often to look, ms. */
  readonly intervalMs: number;
  /** Conversations with a run on this instance: never orphans. */
  readonly runningHere: () => ReadonlySet<string>;
  /** Brings the conversation's run back here; called with its lease taken. */
  readonly takeOver: (convId: string) => Promise<void>;
  readonly onError: (convId: string | undefined, error: unknown) => void;
}

/**
 * Failover (SPEC §7): finds unfinished runs nobody holds a lease on (their owner died) and takes them
 * over. A run is an orphan only when it is seen without a lease on two looks in a row: a run that has
 * just started on another instance writes its checkpoint a moment before it takes its lease.
 *
 * It reads the checkpoint hash's keys and the leases (one round trip each) every `intervalMs`; that
 * costs O(unfinished runs) per look, which is fine at thousands of runs. Should it not be, owners can
 * list their conversations under a heartbeat key and survivors read only a dead owner's list.
 */
export function watchForOrphans(config: OrphanWatchConfig): { dispose(): void } {
  let unleased = new Set<string>();
  let looking = false;
  const look = async (): Promise<void> => {
    const fields = await config.redis.hkeys(config.checkpointsKey);
    const here = config.runningHere();
    const convIds = [...new Set(fields.map(convOfCheckpointField))].filter((convId) => !here.has(convId));
    // Sent back to back on one connection (ioredis does not wait for each reply before the next).
    const exists = await Promise.all(convIds.map((convId) => config.redis.exists(config.leaseKeyOf(convId))));
    const now = new Set(convIds.filter((_, i) => exists[i] === 0));
    const orphans = [...now].filter((convId) => unleased.has(convId));
    unleased = now;
    for (const convId of orphans) {
      if (!(await config.leases.acquire(convId))) continue;
      unleased.delete(convId);
      await config.takeOver(convId).catch((error: unknown) => config.onError(convId, error));
    }
  };
  const timer = setInterval(() => {
    if (looking) return;
    looking = true;
    look()
      .catch((error: unknown) => config.onError(undefined, error))
      .finally(() => (looking = false));
  }, config.intervalMs);
  timer.unref();
  return { dispose: () => clearInterval(timer) };
}
