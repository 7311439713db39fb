import type { Redis } from 'ioredis';

/** A lease this instance holds: its token, when it was taken, and whether a run was seen on it since. */
export interface Held {
  readonly token: string;
  readonly at: number;
  ran: boolean;
}

/** The leases this instance holds, by conversation. */
export type HeldLeases = Map<string, Held>;

const RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

/** Deletes the lease key when it still holds `token`: a lease taken over meanwhile stays its new holder's. */
export async function releaseLease(redis: Redis, leaseKey: string, token: string): Promise<void> {
  await redis.eval(RELEASE, 1, leaseKey, token);
}

export interface LeaseSyncConfig {
  readonly leaseMs: number;
  readonly keysOf: (convId: string) => { readonly lease: string };
  /** Conversations whose run this instance executes now. */
  readonly running: () => readonly string[];
  /** Before a lease is released: the store has committed the run's end. */
  readonly beforeRelease?: () => Promise<void>;
  /** Whether an acquire of the conversation is on its way to Redis: its lease is not to be released under it. */
  readonly acquiring: (convId: string) => boolean;
}

/**
 * Releases the leases of runs that ended: one sync at a time, and a lease taken for a run that has
 * not started yet is kept for a lease's time.
 */
export function createLeaseSync(redis: Redis, held: HeldLeases, config: LeaseSyncConfig): { sync(): Promise<void>; release(convId: string, token: string): Promise<void> } {
  const release = async (convId: string, token: string): Promise<void> => {
    held.delete(convId);
    await releaseLease(redis, config.keysOf(convId).lease, token);
  };
  const syncOnce = async (): Promise<void> => {
    const running = new Set(config.running());
    for (const convId of running) {
      const lease = held.get(convId);
      if (lease) lease.ran = true;
    }
    // A lease taken for a run that has not started yet (its `/chat` is still on its way) is kept:
    // released, the run's first write would be refused. One that never gets a run goes after a lease.
    const now = Date.now();
    const ended = [...held].filter(([convId, lease]) => !running.has(convId) && (lease.ran || now - lease.at > config.leaseMs));
    if (ended.length === 0) return;
    await config.beforeRelease?.();
    // Still ended after the flush, and not taken again meanwhile: a run started since keeps its lease. Nor
    // being taken again now: the acquire script finds this instance's own token and keeps it, and a release
    // sent after it would delete the lease the new run's writes then carry (each refused as lease_lost).
    const still = new Set(config.running());
    const free = ended.filter(([convId, lease]) => !still.has(convId) && !config.acquiring(convId) && held.get(convId) === lease);
    await Promise.all(free.map(([convId, lease]) => release(convId, lease.token)));
  };
  let syncing: Promise<void> | undefined;
  return {
    sync: () => (syncing ??= syncOnce().finally(() => (syncing = undefined))),
    release,
  };
}
