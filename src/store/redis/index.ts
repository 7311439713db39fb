/**
 * The Redis store (docs/protocol.md, Several instances; issue 11): `serve --store redis --redis-url URL`.
 *
 * Data layout (see ./keys.ts; every key under one prefix, default `stepwise:`):
 * - Service-wide hashes and sorted sets: conversations (and their oldest-first order), step settings,
 *   last seqs, engine states, pending pauses (ordered by a counter), checkpoints. `load()` at start
 *   reads them with a few commands, whatever the number of conversations.
 * - Per conversation, under `conv:{id}:`: the frame stream, turns (hash + order list), decisions,
 *   and the sets that index its pauses and checkpoints, so deleting it is one script.
 * - Frames: one Redis Stream per conversation with entry id `<seq>-0`, so the stream's order is the
 *   seq order. The append script checks that an append continues the log (first seq = stored last seq
 *   + 1) and writes all of it or nothing; `frames()` is XRANGE from `since_seq + 1`; `tail$()` is
 *   XREAD BLOCK from the last id seen, so every instance sees every frame once, in order.
 * - Writes are queued and sent as one MULTI per batch (one tick's writes); while Redis is away the
 *   batch is sent again, in order, until it is back (the scripts make a batch sent twice harmless).
 *
 * Where ownership and commands fit (built later on this adapter, issue 11 parts 2 and 3):
 * - Lease: `conv:{id}:lease` (`keys.conversation(id).lease`), taken with `SET key token NX PX
 *   lease_ms` and renewed with a compare-and-`PEXPIRE` script by the owner; it lives beside the
 *   conversation's other keys (same hash tag). Fencing: the append script can take the lease key and
 *   the owner's token as one more KEY/ARGV and refuse an append when the token is not the lease's,
 *   so a stalled former owner cannot write into a log another instance has taken over.
 * - Commands: a stream per instance, `instance:{id}:commands`, XADDed by the instance a route lands
 *   on (after it read the lease's holder) and XREAD BLOCKed by the owner on its own connection like
 *   `tail$`; the reply goes back on a per-request key or the requester's stream. Instances can
 *   announce themselves in a `instances` sorted set scored by heartbeat time. All of it goes under
 *   `keys.prefix` so tests and services sharing one Redis stay apart.
 */
export { createRedisStore, REDIS_STORE_DEFAULTS, type RedisStore, type RedisStoreConfig } from './redis-store.js';
export { createRedisKeys, DEFAULT_KEY_PREFIX, type ConversationKeys, type RedisKeys } from './keys.js';
export { isUnavailability, printableUrl } from './connection.js';
