import type { Redis } from 'ioredis';
import { StoreUnavailableError } from '../core/store-errors.js';

export interface OwnershipConfig {
  /** This instance's id: its heartbeat key and the first part of every token it holds. */
  readonly instanceId: string;
  /** How long an instance stays alive without renewing its heartbeat, ms (`--lease-ms`, default 5000). */
  readonly leaseMs: number;
  /** A conversation's lease key (holds the owner's token) and epoch counter. */
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

/** Who runs a conversation: the instance in its lease's token, and whether that instance's heartbeat lives. */
export interface Owner {
  readonly instanceId: string;
  readonly alive: boolean;
}

/** Where a message for a run's owner went: the owner, and how many of its listeners heard it (0 unless sent). */
export interface Delivery extends Owner {
  readonly heard: number;
}

/**
 * Runs owned across a service (docs/protocol.md, Several instances): one owner per conversation,
 * proven at every write by a fencing token.
 */
export interface Ownership {
  readonly instanceId: string;
  /** The token this instance holds the conversation's run under (what its writes are fenced with). */
  tokenOf(convId: string): string | undefined;
  /**
   * Takes the conversation's run (or finds it this instance's already): false while another live
   * instance holds it. A lease whose holder's heartbeat lapsed is taken over, under a new token.
   */
  acquire(convId: string): Promise<boolean>;
  /**
   * Publishes `message` on the channel of the conversation's owner when that owner lives and is
   * another instance, and says who the owner is and how many listeners heard it; undefined when
   * nobody holds the conversation. `channel` is an instance's channel as `${before}${instanceId}${after}`.
   */
  sendToOwner(convId: string, channel: { readonly before: string; readonly after: string }, message: string): Promise<Delivery | undefined>;
  /** Of these conversations, those nobody alive holds (failover looks for them). */
  orphans(convIds: readonly string[]): Promise<string[]>;
  /** This instance forgets a run it no longer owns (its write was refused): no release, no renewal. */
  drop(convId: string): void;
  /** Lets a lease go now (a takeover that could not bring the run back), so that it is taken again. */
  release(convId: string): Promise<void>;
  /** Releases the leases of runs that ended (also done every `leaseMs / 4`). */
  sync(): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * Taken atomically: a token of this instance is kept; a free lease, or one whose holder's heartbeat
 * key is gone, becomes `<instance>/<epoch>` with a new epoch, so a deposed owner's token is never
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
/** KEYS: lease. ARGV: heartbeat key before and after the id. Returns the token and 1 when its holder lives, else 0; nil when free. */
/**
 * A command's way to a run's owner, in one round trip: finds the holder of the lease and whether its
 * heartbeat lives, and when it lives and is another instance, publishes the message on its channel.
 * KEYS: lease. ARGV: heartbeat key before and after the id, this instance's id, the channel before
 * and after the id, the message. Returns nil when nobody holds the lease, else {token, alive, heard}.
 */
const SEND_TO_OWNER = `
local token = redis.call('GET', KEYS[1])
if not token then return nil end
local holder = string.match(token, '^(.+)/%d+$')
if not holder then return {token, 0, 0} end
local alive = redis.call('EXISTS', ARGV[1] .. holder .. ARGV[2])
local heard = 0
if alive == 1 and holder ~= ARGV[3] then heard = redis.call('PUBLISH', ARGV[4] .. holder .. ARGV[5], ARGV[6]) end
return {token, alive, heard}`;
const RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

const instanceOf = (token: string): string => token.slice(0, token.lastIndexOf('/'));

/** A Redis command of a request's path: failing, it is the store being unreachable (503 `store_unavailable`). */
export async function reaching<T>(command: Promise<T>): Promise<T> {
  try {
    return await command;
  } catch (error) {
    throw new StoreUnavailableError('redis', 'the service', (error as Error).message);
  }
}

/**
 * Ownership by one heartbeat per instance (SET PX `leaseMs`, renewed every `leaseMs / 4` on a
 * connection of its own) and a lease per run that holds the owner's token and never expires by
 * itself: renewal costs the same with one run or ten thousand, and a busy event loop that still
 * renews within the lease keeps every run. A run is taken over only once its owner's heartbeat key
 * is gone, that is after the owner missed its renewals for the whole lease.
 */
/** A lease this instance holds: its token, when it was taken, and whether a run was seen on it since. */
interface Held {
  readonly token: string;
  readonly at: number;
  ran: boolean;
}

export function createOwnership(redis: Redis, heartbeat: Redis, config: OwnershipConfig): Ownership {
  const tokens = new Map<string, Held>();
  // Sent by its SHA (EVALSHA), the script text only when Redis does not know it yet.
  redis.defineCommand('stepwiseSendToOwner', { numberOfKeys: 1, lua: SEND_TO_OWNER });
  const sendToOwnerScript = (redis as unknown as Record<'stepwiseSendToOwner', (...keysAndArgs: string[]) => Promise<unknown>>).stepwiseSendToOwner.bind(redis);
  const aliveKey = (instanceId: string): string => `${config.heartbeatKey.before}${instanceId}${config.heartbeatKey.after}`;
  const ownKey = aliveKey(config.instanceId);
  let beating: Promise<void> | undefined;
  let disposed = false;
  // Whether a heartbeat was ever set: a lease is never taken by an instance that looks dead.
  let beaten = false;

  /** Renews the heartbeat; when it had lapsed, the runs whose lease went elsewhere are stopped here. */
  const beat = async (): Promise<void> => {
    const previous = await heartbeat.set(ownKey, '1', 'PX', config.leaseMs, 'GET');
    // Registered before any lease is taken (acquire waits for the first beat), so an instance that
    // dies holding runs is always one the others look for; again after a lapse, as they forget dead ones.
    if (previous === null) await heartbeat.sadd(config.registryKey, config.instanceId);
    const first = !beaten;
    beaten = true;
    if (first || previous !== null || tokens.size === 0) return;
    const convIds = [...tokens.keys()];
    const holders = await redis.mget(convIds.map((convId) => config.keysOf(convId).lease));
    convIds.forEach((convId, i) => {
      if (holders[i] === tokens.get(convId)?.token) return;
      tokens.delete(convId);
      config.onLost?.(convId);
    });
  };
  const renew = (): void => {
    beating ??= beat()
      .catch(() => undefined)
      .finally(() => (beating = undefined));
  };

  const release = async (convId: string, token: string): Promise<void> => {
    tokens.delete(convId);
    await redis.eval(RELEASE, 1, config.keysOf(convId).lease, token);
  };
  let syncing: Promise<void> | undefined;
  const syncOnce = async (): Promise<void> => {
    const running = new Set(config.running());
    for (const convId of running) {
      const held = tokens.get(convId);
      if (held) held.ran = true;
    }
    // A lease taken for a run that has not started yet (its `/chat` is still on its way) is kept:
    // released, the run's first write would be refused. One that never gets a run goes after a lease.
    const now = Date.now();
    const ended = [...tokens].filter(([convId, held]) => !running.has(convId) && (held.ran || now - held.at > config.leaseMs));
    if (ended.length === 0) return;
    await config.beforeRelease?.();
    // Still ended after the flush, and not taken again meanwhile: a run started since keeps its lease.
    const still = new Set(config.running());
    await Promise.all(ended.filter(([convId, held]) => !still.has(convId) && tokens.get(convId) === held).map(([convId, held]) => release(convId, held.token)));
  };
  const sync = (): Promise<void> => (syncing ??= syncOnce().finally(() => (syncing = undefined)));

  const timer = setInterval(() => {
    renew();
    void sync().catch(() => undefined);
  }, Math.max(10, Math.floor(config.leaseMs / 4)));
  timer.unref();
  renew();

  const owners = async (convIds: readonly string[]): Promise<(Owner | undefined)[]> => {
    if (convIds.length === 0) return [];
    const held = await reaching(redis.mget(convIds.map((convId) => config.keysOf(convId).lease)));
    const instances = [...new Set(held.filter((token): token is string => token !== null).map(instanceOf))];
    const alive = instances.length === 0 ? [] : await reaching(Promise.all(instances.map((instanceId) => redis.exists(aliveKey(instanceId)))));
    const isAlive = new Map(instances.map((instanceId, i) => [instanceId, alive[i] === 1]));
    return held.map((token) => (token === null ? undefined : { instanceId: instanceOf(token), alive: isAlive.get(instanceOf(token)) ?? false }));
  };

  return {
    instanceId: config.instanceId,
    tokenOf: (convId) => tokens.get(convId)?.token,
    acquire: async (convId) => {
      if (disposed) return false;
      if (!beaten) await beating;
      if (!beaten) await reaching(beat());
      const { lease, epoch } = config.keysOf(convId);
      const token = (await reaching(redis.eval(ACQUIRE, 2, lease, epoch, config.instanceId, config.heartbeatKey.before, config.heartbeatKey.after))) as string | null;
      if (token === null) return false;
      tokens.set(convId, { token, at: Date.now(), ran: false });
      return true;
    },
    // One round trip for every command a route forwards: the owner is found and told at once.
    sendToOwner: async (convId, channel, message) => {
      const { before, after } = config.heartbeatKey;
      const args = [before, after, config.instanceId, channel.before, channel.after, message];
      const found = (await reaching(sendToOwnerScript(config.keysOf(convId).lease, ...args))) as [string, number, number] | null;
      return found ? { instanceId: instanceOf(found[0]), alive: found[1] === 1, heard: found[2] } : undefined;
    },
    orphans: async (convIds) => {
      const found = await owners(convIds);
      return convIds.filter((_, i) => !found[i]?.alive);
    },
    drop: (convId) => void tokens.delete(convId),
    release: async (convId) => {
      const held = tokens.get(convId);
      if (!held) return;
      // Kept while Redis cannot be told: the next sync lets it go (no run ever started on it).
      await redis.eval(RELEASE, 1, config.keysOf(convId).lease, held.token);
      if (tokens.get(convId) === held) tokens.delete(convId);
    },
    sync,
    dispose: async () => {
      disposed = true;
      clearInterval(timer);
      await Promise.all([...tokens].map(([convId, held]) => release(convId, held.token).catch(() => undefined)));
      await heartbeat.del(ownKey).catch(() => undefined);
    },
  };
}
