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
 * - Pending pauses are also indexed by deadline (`pause-deadlines`), so the inbox reads the soonest
 *   a page at a time (./pause-deadlines.ts).
 *
 * Leases and commands are the service's, built on this adapter (src/service/index.ts): a lease per
 * conversation (`conv:{id}:lease`, the owner's token `<instance>/<epoch>`, no expiry) checked inside
 * every write script (fencing), one heartbeat per instance (`instance:{id}:alive`) and the registry of
 * instances (`instances`), and commands over pub/sub on `instance:{id}:commands`.
 */
export { createRedisStore, REDIS_STORE_DEFAULTS, type RedisStore, type RedisStoreConfig } from './redis-store.js';
export { createRedisKeys, DEFAULT_KEY_PREFIX, type ConversationKeys, type RedisKeys } from './keys.js';
export { isUnavailability, printableUrl } from './connection.js';
