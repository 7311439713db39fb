import type { Redis } from 'ioredis';
import { from, lastValueFrom, mergeMap } from 'rxjs';
import { convOfCheckpointField } from '../store/redis/keys.js';
import type { Ownership } from './ownership.js';

export interface OrphanWatchConfig {
  readonly redis: Redis;
  /** The store's service-wide checkpoint hash: one field per unfinished run, `[conv_id, inference_id]`. */
  readonly checkpointsKey: string;
  readonly ownership: Ownership;
  /** How often to look, ms. */
  readonly intervalMs: number;
  /** How long an instance lives without renewing its heartbeat, ms (`--lease-ms`). */
  readonly leaseMs: number;
  /** Conversations with a run on this instance: never orphans. */
  readonly runningHere: () => ReadonlySet<string>;
  /** Brings the conversation's run back here; called with its lease taken. */
  readonly takeOver: (convId: string) => Promise<void>;
  readonly onError: (convId: string | undefined, error: unknown) => void;
}

/**
 * Failover (docs/protocol.md, Several instances): finds unfinished runs whose owner is dead (its
 * heartbeat key lapsed) or that nobody holds, and takes them over. A run's lease is taken before its
 * first checkpoint is written, so a run being created is never seen without an owner.
 *
 * After Redis was unreachable, it waits a whole lease before taking anything over (see `reachableSince`).
 * Each look reads the checkpoint hash's keys, their leases and the heartbeats of their holders: a few
 * round trips, O(unfinished runs) in size, which is fine at thousands of runs.
 */
/** Takeovers in flight at once: each is a handful of reads, then the run is back. */
const TAKEOVERS_AT_ONCE = 16;

export function watchForOrphans(config: OrphanWatchConfig): { dispose(): void } {
  let looking = false;
  // Since when this watcher has reached Redis without a failure. Heartbeats lapse while Redis is away
  // (their keys expire meanwhile), and every instance renews its own only once Redis is back: a run is
  // taken over only after a whole lease of Redis reachable, when a live owner has renewed for sure.
  let reachableSince: number | undefined = Date.now();
  const look = async (): Promise<void> => {
    const fields = await config.redis.hkeys(config.checkpointsKey);
    reachableSince ??= Date.now();
    if (Date.now() - reachableSince < config.leaseMs) return;
    const here = config.runningHere();
    const convIds = [...new Set(fields.map(convOfCheckpointField))].filter((convId) => !here.has(convId));
    const orphans = await config.ownership.orphans(convIds);
    // A few at a time: a dead owner's thousand runs are back within the lease plus a second, and
    // a takeover that failed (Redis went away meanwhile) lets the run go, so the next look retries it.
    await lastValueFrom(
      from(orphans).pipe(
        mergeMap(async (convId) => {
          // The acquire script checks again, atomically: another survivor may have taken it first.
          if (!(await config.ownership.acquire(convId))) return;
          await config.takeOver(convId).catch(async (error: unknown) => {
            config.onError(convId, error);
            await config.ownership.release(convId).catch(() => undefined);
          });
        }, TAKEOVERS_AT_ONCE),
      ),
      { defaultValue: undefined },
    );
  };
  const timer = setInterval(() => {
    if (looking) return;
    looking = true;
    look()
      .catch((error: unknown) => {
        reachableSince = undefined;
        config.onError(undefined, error);
      })
      .finally(() => (looking = false));
  }, config.intervalMs);
  timer.unref();
  return { dispose: () => clearInterval(timer) };
}
