import type { Redis } from 'ioredis';
import { createHeartbeat } from './heartbeat.js';
import { createLeaseSync, releaseLease, type HeldLeases } from './held-leases.js';
import { createHolderLookup, type Delivery } from './lease-holders.js';
import { reaching } from './reaching.js';

export interface RunLeasesConfig {
  /** This instance's id: its heartbeat key and the first part of every token it holds. */
  readonly instanceId: string;
  /** How long an instance stays alive without renewing its heartbeat, ms (`--lease-ms`, default 5000). */
  readonly leaseMs: number;
  /** A conversation's lease key (holds the token of the instance that runs it) and epoch counter. */
  readonly keysOf: (convId: string) => { readonly lease: string; readonly epoch: string };
  /** An instance's heartbeat key, as `${before}${instanceId}${after}`: the acquire script builds it from the token. */
  readonly heartbeatKey: { readonly before: string; readonly after: string };
  /** The service's instance registry (a SET of ids): joined at the first heartbeat and after one lapsed, watched for dead instances (./orphans.ts). */
  readonly registryKey: string;
  /** Conversations whose run this instance executes now; a held lease of any other is released. */
  readonly running: () => readonly string[];
  /** Before a lease is released: the store has committed the run's end, so nobody resumes a finished run. */
  readonly beforeRelease?: () => Promise<void>;
  /** A run's lease is another instance's now (this one stalled past its heartbeat): stop the run here. */
  readonly onLost?: (convId: string) => void;
}

/**
 * Who runs what across a service (docs/protocol.md, Several instances): one instance runs a
 * conversation, holding its lease, and proves it at every write by a fencing token.
 */
export interface RunLeases {
  readonly instanceId: string;
  /** The token this instance holds the conversation's run under (what its writes are fenced with). */
  tokenOf(convId: string): string | undefined;
  /**
   * Takes the conversation's run (or finds it this instance's already): false while another live
   * instance holds it. A lease whose holder's heartbeat lapsed is taken over, under a new token.
   */
  acquire(convId: string): Promise<boolean>;
  /**
   * Publishes `message` on the channel of the instance that runs the conversation when that instance
   * lives and is another one, and says which it is and how many listeners heard it; undefined when
   * nobody holds the conversation. `channel` is an instance's channel as `${before}${instanceId}${after}`.
   */
  sendToHolder(convId: string, channel: { readonly before: string; readonly after: string }, message: string): Promise<Delivery | undefined>;
  /** Of these conversations, those nobody alive holds (failover looks for them). */
  orphans(convIds: readonly string[]): Promise<string[]>;
  /** This instance forgets a run it no longer holds the lease of (its write was refused): no release, no renewal. */
  drop(convId: string): void;
  /** Lets a lease go now (a takeover that could not bring the run back), so that it is taken again. */
  release(convId: string): Promise<void>;
  /** Releases the leases of runs that ended (also done every `leaseMs / 4`). */
  sync(): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * Taken atomically: a token of this instance is kept; a free lease, or one whose holder's heartbeat
 * key is gone, becomes `<instance>/<epoch>` with a new epoch, so a deposed instance's token is never
 * valid again, even should it take the conversation back later. KEYS: lease, epoch. ARGV: instance
 * id, heartbeat key before and after the id.
 */
const ACQUIRE = `
local current = redis.call('GET', KEYS[1])
if current then
  local holder = string.match(current, '^(.+)/%d+$')
  if holder == ARGV[1] then return current end
  if holder and redis.call('EXISTS', ARGV[2] .. holder .. ARGV[3]) == 1 then return false end
end
local token = ARGV[1] .. '/' .. redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token)
return token`;

/**
 * Leases by one heartbeat per instance (SET PX `leaseMs`, renewed every `leaseMs / 4` on a
 * connection of its own) and a lease per run that holds the token of the instance running it and
 * never expires by itself: renewal costs the same with one run or ten thousand, and a busy event loop
 * that still renews within the lease keeps every run. A run is taken over only once the heartbeat key
 * of the instance running it is gone, that is after that instance missed its renewals for the whole lease.
 */
export function createRunLeases(redis: Redis, heartbeat: Redis, config: RunLeasesConfig): RunLeases {
  const held: HeldLeases = new Map();
  // Acquires on their way, by conversation: a release waits for none of them and is not sent under one.
  const acquiring = new Map<string, number>();
  const { before, after } = config.heartbeatKey;
  const beat = createHeartbeat(redis, heartbeat, held, { ...config, key: `${before}${config.instanceId}${after}` });
  const leases = createLeaseSync(redis, held, { ...config, acquiring: (convId) => acquiring.has(convId) });
  const lookup = createHolderLookup(redis, config);
  let disposed = false;

  const timer = setInterval(() => {
    beat.renew();
    void leases.sync().catch(() => undefined);
  }, Math.max(10, Math.floor(config.leaseMs / 4)));
  timer.unref();
  beat.renew();

  return {
    instanceId: config.instanceId,
    tokenOf: (convId) => held.get(convId)?.token,
    acquire: async (convId) => {
      if (disposed) return false;
      acquiring.set(convId, (acquiring.get(convId) ?? 0) + 1);
      try {
        await beat.started();
        const { lease, epoch } = config.keysOf(convId);
        const token = (await reaching(redis.eval(ACQUIRE, 2, lease, epoch, config.instanceId, before, after))) as string | null;
        if (token === null) return false;
        held.set(convId, { token, at: Date.now(), ran: false });
        return true;
      } finally {
        const left = (acquiring.get(convId) ?? 1) - 1;
        if (left === 0) acquiring.delete(convId);
        else acquiring.set(convId, left);
      }
    },
    sendToHolder: lookup.sendToHolder,
    orphans: async (convIds) => {
      const found = await lookup.holders(convIds);
      return convIds.filter((_, i) => !found[i]?.alive);
    },
    drop: (convId) => void held.delete(convId),
    release: async (convId) => {
      const lease = held.get(convId);
      // Taken again meanwhile (an acquire on its way keeps this very token): it is that run's now.
      if (!lease || acquiring.has(convId)) return;
      // Kept while Redis cannot be told: the next sync lets it go (no run ever started on it).
      await releaseLease(redis, config.keysOf(convId).lease, lease.token);
      if (held.get(convId) === lease) held.delete(convId);
    },
    sync: leases.sync,
    dispose: async () => {
      disposed = true;
      clearInterval(timer);
      await Promise.all([...held].map(([convId, lease]) => leases.release(convId, lease.token).catch(() => undefined)));
      await beat.stop().catch(() => undefined);
    },
  };
}
