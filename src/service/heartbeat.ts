import type { Redis } from 'ioredis';
import type { HeldLeases } from './held-leases.js';
import { reaching } from './reaching.js';

export interface HeartbeatConfig {
  readonly leaseMs: number;
  /** This instance's heartbeat key. */
  readonly key: string;
  readonly instanceId: string;
  /** The service's instance registry (a SET of ids), watched for dead instances (./orphans.ts). */
  readonly registryKey: string;
  readonly keysOf: (convId: string) => { readonly lease: string };
  /** A run's lease is another instance's now (this one stalled past its heartbeat). */
  readonly onLost?: (convId: string) => void;
}

/** One heartbeat per instance (SET PX `leaseMs`), renewed on a connection of its own. */
export interface Heartbeat {
  /** Renews it, unless a renewal is on its way. */
  renew(): void;
  /** Resolves once a heartbeat was ever set (setting it now if none was); fails when Redis cannot be reached. */
  started(): Promise<void>;
  /** Deletes the heartbeat key: the instance is gone. */
  stop(): Promise<void>;
}

/**
 * `redis` reads the leases, `heartbeat` is the connection that renews. When a renewal finds the
 * heartbeat had lapsed, the runs whose lease went elsewhere meanwhile are dropped from `held` and
 * stopped here (`onLost`).
 */
export function createHeartbeat(redis: Redis, heartbeat: Redis, held: HeldLeases, config: HeartbeatConfig): Heartbeat {
  let beating: Promise<void> | undefined;
  // Whether a heartbeat was ever set: a lease is never taken by an instance that looks dead.
  let beaten = false;

  const beat = async (): Promise<void> => {
    const previous = await heartbeat.set(config.key, '1', 'PX', config.leaseMs, 'GET');
    // Registered before any lease is taken (acquire waits for the first beat), so an instance that
    // dies holding runs is always one the others look for; again after a lapse, as they forget dead ones.
    if (previous === null) await heartbeat.sadd(config.registryKey, config.instanceId);
    const first = !beaten;
    beaten = true;
    if (first || previous !== null || held.size === 0) return;
    const convIds = [...held.keys()];
    const holders = await redis.mget(convIds.map((convId) => config.keysOf(convId).lease));
    convIds.forEach((convId, i) => {
      if (holders[i] === held.get(convId)?.token) return;
      held.delete(convId);
      config.onLost?.(convId);
    });
  };

  return {
    renew: () => {
      beating ??= beat()
        .catch(() => undefined)
        .finally(() => (beating = undefined));
    },
    started: async () => {
      if (!beaten) await beating;
      if (!beaten) await reaching(beat());
    },
    stop: () => heartbeat.del(config.key).then(() => undefined),
  };
}
