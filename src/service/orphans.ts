import type { Redis } from 'ioredis';
import { from, lastValueFrom, mergeMap } from 'rxjs';
import { convOfCheckpointField } from '../store/redis/keys.js';
import type { RunLeases } from './run-leases.js';

export interface OrphanWatchConfig {
  readonly redis: Redis;
  /** The store's service-wide checkpoint hash: one field per unfinished run, `[conv_id, inference_id]`. */
  readonly checkpointsKey: string;
  /** The service's instance registry (SET of ids), where every instance adds itself when its heartbeat starts. */
  readonly registryKey: string;
  /** An instance's heartbeat key, as `${before}${instanceId}${after}`. */
  readonly heartbeatKey: { readonly before: string; readonly after: string };
  readonly leases: RunLeases;
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

/** Takeovers in flight at once: each is a handful of reads, then the run is back. */
const TAKEOVERS_AT_ONCE = 16;

/**
 * Every so often the whole service is looked through even with no instance gone: a safety net for a
 * lease let go by a path that announces nothing (a run stopped without its instance dying).
 */
const LOOK_EVERYWHERE_MS = 30_000;

/**
 * Forgets the registered instances of ARGV[3..] whose heartbeat is still gone: one that came back
 * meanwhile has registered again and stays. KEYS: registry. ARGV: heartbeat key before and after the id.
 */
const FORGET_DEAD = `
local forgotten = 0
for i = 3, #ARGV do
  if redis.call('EXISTS', ARGV[1] .. ARGV[i] .. ARGV[2]) == 0 then forgotten = forgotten + redis.call('SREM', KEYS[1], ARGV[i]) end
end
return forgotten`;

/**
 * Failover (docs/protocol.md, Several instances): finds unfinished runs whose instance is dead (its
 * heartbeat key lapsed) or that nobody holds, and takes them over. A run's lease is taken before its
 * first checkpoint is written, so a run being created is never seen without an instance holding its lease.
 *
 * Each look costs one round trip per registered instance count, not per run: it reads the instance
 * registry and their heartbeats, and only when an instance is gone (died, stalled past its lease, or
 * stopped and let its leases go) does it read the checkpoint hash's keys, their leases and holders,
 * O(unfinished runs), to take over what lost its instance. With 100 000 paused runs in a service, a look
 * with every instance alive reads a few keys instead of every run's lease.
 *
 * After Redis was unreachable, it waits a whole lease before taking anything over (see `reachableSince`),
 * then looks everywhere once.
 */
export function watchForOrphans(config: OrphanWatchConfig): { dispose(): void } {
  let looking = false;
  // Since when this watcher has reached Redis without a failure. Heartbeats lapse while Redis is away
  // (their keys expire meanwhile), and every instance renews its own only once Redis is back: a run is
  // taken over only after a whole lease of Redis reachable, when a live instance has renewed for sure.
  let reachableSince: number | undefined = Date.now();
  // When every unfinished run was last looked at with nothing left behind; undefined: never, or a look failed since.
  let lookedEverywhereAt: number | undefined;

  const look = async (): Promise<void> => {
    const dead = await deadInstances(config);
    reachableSince ??= Date.now();
    if (Date.now() - reachableSince < config.leaseMs) return;
    const due = dead.length > 0 || lookedEverywhereAt === undefined || Date.now() - lookedEverywhereAt >= LOOK_EVERYWHERE_MS;
    if (!due) return;
    const started = Date.now();
    if (!(await takeOverOrphans(config))) return;
    lookedEverywhereAt = started;
    const { before, after } = config.heartbeatKey;
    if (dead.length > 0) await config.redis.eval(FORGET_DEAD, 1, config.registryKey, before, after, ...dead);
  };
  const timer = setInterval(() => {
    if (looking) return;
    looking = true;
    look()
      .catch((error: unknown) => {
        reachableSince = undefined;
        lookedEverywhereAt = undefined;
        config.onError(undefined, error);
      })
      .finally(() => (looking = false));
  }, config.intervalMs);
  timer.unref();
  return { dispose: () => clearInterval(timer) };
}

/** The registered instances whose heartbeat key is gone. */
async function deadInstances({ redis, registryKey, heartbeatKey }: OrphanWatchConfig): Promise<string[]> {
  const registered = await redis.smembers(registryKey);
  if (registered.length === 0) return [];
  const alive = await redis.exists(...registered.map((instanceId) => `${heartbeatKey.before}${instanceId}${heartbeatKey.after}`));
  // EXISTS of several keys counts them: only one by one says which lapsed, in one pipelined trip.
  if (alive === registered.length) return [];
  const each = await Promise.all(registered.map((instanceId) => redis.exists(`${heartbeatKey.before}${instanceId}${heartbeatKey.after}`)));
  return registered.filter((_, i) => each[i] === 0);
}

/**
 * Looks through every unfinished run and takes over the ones whose instance is dead or that nobody
 * holds. True when nothing was left behind: no takeover failed (its run is let go and taken again at
 * the next look).
 */
async function takeOverOrphans(config: OrphanWatchConfig): Promise<boolean> {
  const fields = await config.redis.hkeys(config.checkpointsKey);
  const here = config.runningHere();
  // A field that names no conversation is no run to take over; it must not stop the look at the others.
  const convIds = [...new Set(fields.flatMap((field) => convOfCheckpointField(field) ?? []))].filter((convId) => !here.has(convId));
  const orphans = await config.leases.orphans(convIds);
  let complete = true;
  // A few at a time: a dead instance's thousand runs are back within the lease plus a second.
  await lastValueFrom(
    from(orphans).pipe(
      mergeMap(async (convId) => {
        // The acquire script checks again, atomically: another survivor may have taken it first.
        if (!(await config.leases.acquire(convId))) return;
        await config.takeOver(convId).catch(async (error: unknown) => {
          complete = false;
          config.onError(convId, error);
          await config.leases.release(convId).catch(() => undefined);
        });
      }, TAKEOVERS_AT_ONCE),
    ),
    { defaultValue: undefined },
  );
  return complete;
}
