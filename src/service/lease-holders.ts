import type { Redis } from 'ioredis';
import { reaching } from './reaching.js';

/** The instance that runs a conversation: the one in its lease's token, and whether its heartbeat lives. */
export interface LeaseHolder {
  readonly instanceId: string;
  readonly alive: boolean;
}

/** Where a message for the instance running a conversation went: that instance, and how many of its listeners heard it (0 unless sent). */
export interface Delivery extends LeaseHolder {
  readonly heard: number;
}

/**
 * A command's way to the instance that runs a conversation, in one round trip: finds the holder of the lease and whether its
 * heartbeat lives, and when it lives and is another instance, publishes the message on its channel.
 * KEYS: lease. ARGV: heartbeat key before and after the id, this instance's id, the channel before
 * and after the id, the message. Returns nil when nobody holds the lease, else {token, alive, heard}.
 */
const SEND_TO_HOLDER = `
local token = redis.call('GET', KEYS[1])
if not token then return nil end
local holder = string.match(token, '^(.+)/%d+$')
if not holder then return {token, 0, 0} end
local alive = redis.call('EXISTS', ARGV[1] .. holder .. ARGV[2])
local heard = 0
if alive == 1 and holder ~= ARGV[3] then heard = redis.call('PUBLISH', ARGV[4] .. holder .. ARGV[5], ARGV[6]) end
return {token, alive, heard}`;

/** An instance's key or channel, as `${before}${instanceId}${after}`. */
export interface KeyAround {
  readonly before: string;
  readonly after: string;
}

export interface HolderLookupConfig {
  readonly instanceId: string;
  readonly keysOf: (convId: string) => { readonly lease: string };
  readonly heartbeatKey: KeyAround;
}

/** Who holds runs' leases, and a message for the instance that runs a conversation. */
export interface HolderLookup {
  holders(convIds: readonly string[]): Promise<(LeaseHolder | undefined)[]>;
  sendToHolder(convId: string, channel: KeyAround, message: string): Promise<Delivery | undefined>;
}

const instanceOf = (token: string): string => token.slice(0, token.lastIndexOf('/'));

export function createHolderLookup(redis: Redis, config: HolderLookupConfig): HolderLookup {
  // Sent by its SHA (EVALSHA), the script text only when Redis does not know it yet.
  redis.defineCommand('stepwiseSendToHolder', { numberOfKeys: 1, lua: SEND_TO_HOLDER });
  const sendToHolderScript = (redis as unknown as Record<'stepwiseSendToHolder', (...keysAndArgs: string[]) => Promise<unknown>>).stepwiseSendToHolder.bind(redis);
  const { before, after } = config.heartbeatKey;
  return {
    holders: async (convIds) => {
      if (convIds.length === 0) return [];
      const held = await reaching(redis.mget(convIds.map((convId) => config.keysOf(convId).lease)));
      const instances = [...new Set(held.filter((token): token is string => token !== null).map(instanceOf))];
      const alive = instances.length === 0 ? [] : await reaching(Promise.all(instances.map((instanceId) => redis.exists(`${before}${instanceId}${after}`))));
      const isAlive = new Map(instances.map((instanceId, i) => [instanceId, alive[i] === 1]));
      return held.map((token) => (token === null ? undefined : { instanceId: instanceOf(token), alive: isAlive.get(instanceOf(token)) ?? false }));
    },
    // One round trip for every command a route forwards: the instance running it is found and told at once.
    sendToHolder: async (convId, channel, message) => {
      const args = [before, after, config.instanceId, channel.before, channel.after, message];
      const found = (await reaching(sendToHolderScript(config.keysOf(convId).lease, ...args))) as [string, number, number] | null;
      return found ? { instanceId: instanceOf(found[0]), alive: found[1] === 1, heard: found[2] } : undefined;
    },
  };
}
