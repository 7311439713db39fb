import type { Redis } from 'ioredis';

export interface LeaseConfig {
  /** This instance's token: what the lease key holds while it owns a run. */
  readonly instanceId: string;
  /** How long a lease lives without renewal, ms (`--lease-ms`, default 5000). */
  readonly leaseMs: number;
  /** The lease key of a conversation (`conv:{id}:lease` under the store's prefix). */
  readonly keyOf: (convId: string) => string;
  /** Conversations whose run this instance executes now: they must hold a lease. */
  readonly running: () => readonly string[];
  /** Before a lease is released: the store has committed the run's end, so no one resumes a finished run. */
  readonly beforeRelease?: () => Promise<void>;
  /** A running run's lease went to another instance (it lapsed here): stop the run here. */
  readonly onLost?: (convId: string) => void;
}

/** Runs owned under leases (SPEC §7): one owner per conversation across the service. */
export interface Leases {
  /** The instance that owns the conversation's run, or null when none does. */
  holder(convId: string): Promise<string | null>;
  /** Takes the lease (or finds it already this instance's): false when another instance holds it. */
  acquire(convId: string): Promise<boolean>;
  /** Renews the leases of running runs and releases the others now (also done every `leaseMs / 3`). */
  sync(): Promise<void>;
  dispose(): Promise<void>;
}

// Compare-and-act on the token, so an instance never extends or drops a lease another one took.
const RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
const RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

export function createLeases(redis: Redis, config: LeaseConfig): Leases {
  const held = new Set<string>();
  const acquire = async (convId: string): Promise<boolean> => {
    const key = config.keyOf(convId);
    const taken = await redis.set(key, config.instanceId, 'PX', config.leaseMs, 'NX');
    const mine = taken === 'OK' || (await redis.get(key)) === config.instanceId;
    if (mine) held.add(convId);
    return mine;
  };
  const release = async (convId: string): Promise<void> => {
    held.delete(convId);
    await redis.eval(RELEASE, 1, config.keyOf(convId), config.instanceId);
  };
  let syncing: Promise<void> | undefined;
  const syncOnce = async (): Promise<void> => {
    const running = new Set(config.running());
    const ended = [...held].filter((convId) => !running.has(convId));
    if (ended.length > 0) await config.beforeRelease?.();
    for (const convId of ended) await release(convId);
    for (const convId of [...held]) {
      if ((await redis.eval(RENEW, 1, config.keyOf(convId), config.instanceId, config.leaseMs)) === 1) continue;
      held.delete(convId);
      // Lapsed but free (a slow tick): taken again. Held by another instance: that one runs it now.
      if (!(await acquire(convId))) config.onLost?.(convId);
    }
    for (const convId of running) if (!held.has(convId)) await acquire(convId);
  };
  // One sync at a time; a failed one (Redis away) is tried again at the next tick.
  const sync = (): Promise<void> => (syncing ??= syncOnce().finally(() => (syncing = undefined)));
  const timer = setInterval(() => void sync().catch(() => undefined), Math.max(10, Math.floor(config.leaseMs / 3)));
  timer.unref();
  return {
    holder: (convId) => redis.get(config.keyOf(convId)),
    acquire,
    sync,
    dispose: async () => {
      clearInterval(timer);
      await Promise.all([...held].map((convId) => release(convId).catch(() => undefined)));
    },
  };
}
