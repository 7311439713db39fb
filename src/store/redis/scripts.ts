import type { ChainableCommander, Redis } from 'ioredis';

/**
 * The store's Lua scripts: the writes that must read before they write, done inside Redis so that
 * two instances (or a batch sent again after a lost reply) cannot interleave between the read and the
 * write. ioredis sends them by EVALSHA and loads them when Redis does not know them (after a restart).
 */
// Fencing (docs/protocol.md, Several instances): the writes of a run carry the token its owner holds
// the conversation's lease under, and do nothing (returning 1) unless the lease holds exactly that
// token: a deposed owner, or one that never took the lease, cannot write. An empty token (a store
// never fenced, one process alone) reads no lease.
const FENCED = (lease: string, token: string): string =>
  `if ${token} ~= '' and redis.call('GET', ${lease}) ~= ${token} then return 1 end`;

const SCRIPTS = {
  /**
   * The appends of one batch, in order, each all or nothing. KEYS: last-seqs, then the streams and
   * lease keys. ARGV: retry flag, max frames (0: keep all), trim threshold, append count; then per
   * append: its conversation count, per conversation (conv_id, index of its stream in KEYS, index of
   * its lease, first seq, frame count, the writer's token for it), then its frames grouped the same way,
   * each as its entry's field and value: `w` and its wire text, or `e` and its event's JSON. Returns per append {0, 0} when written, {i, expected} when its conversation i does
   * not continue its log, {i, -1} when i's lease does not hold the writer's token. A batch sent again
   * (retry) counts an append already wholly there as written, so a lost reply is harmless: under the
   * fence only the token's holder writes the log, so what is there is its own.
   */
  stepwiseAppend: `
local retry, max, trimAt, appends = ARGV[1] == '1', tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local results, at = {}, 5
for a = 1, appends do
  local count = tonumber(ARGV[at])
  at = at + 1
  local plans, refused = {}, nil
  for i = 1, count do
    local conv, stream, lease, first, n, token = ARGV[at], KEYS[tonumber(ARGV[at + 1])], KEYS[tonumber(ARGV[at + 2])], tonumber(ARGV[at + 3]), tonumber(ARGV[at + 4]), ARGV[at + 5]
    at = at + 6
    local write = false
    if not refused then
      if token ~= '' and redis.call('GET', lease) ~= token then
        refused = {i, -1}
      else
        local last = tonumber(redis.call('HGET', KEYS[1], conv) or '0')
        write = first == last + 1
        if not write and not (retry and first + n - 1 <= last) then refused = {i, last + 1} end
      end
    end
    plans[i] = {conv, stream, first, n, write}
  end
  for i = 1, count do
    local conv, stream, first, n, write = unpack(plans[i])
    if write and not refused then
      for j = 0, n - 1 do
        redis.call('XADD', stream, string.format('%d-0', first + j), ARGV[at + 2 * j], ARGV[at + 2 * j + 1])
      end
      redis.call('HSET', KEYS[1], conv, string.format('%d', first + n - 1))
      if max > 0 and redis.call('XLEN', stream) > trimAt then redis.call('XTRIM', stream, 'MAXLEN', max) end
    end
    at = at + 2 * n
  end
  results[a] = refused or {0, 0}
end
return results`,
  /** KEYS: turns, turn-order, lease. ARGV: turn id, blocks JSON, token. A new turn goes last; a known one keeps its place. */
  stepwiseTurn: `
${FENCED('KEYS[3]', 'ARGV[3]')}
if redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) == 1 then redis.call('RPUSH', KEYS[2], ARGV[1]) end
return 0`,
  /**
   * KEYS: counter, pauses, pause-order, the conversation's pause set, lease, pause-convs, pause-deadlines.
   * ARGV: pause id, pause JSON, token, conv_id, deadline (ms).
   */
  stepwisePause: `
${FENCED('KEYS[5]', 'ARGV[3]')}
local n = redis.call('INCR', KEYS[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], n, ARGV[1])
redis.call('ZADD', KEYS[7], ARGV[5], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('HSET', KEYS[6], ARGV[1], ARGV[4])
return 0`,
  /**
   * KEYS: pauses, pause-order, the conversation's pause set, decisions, decided, lease, pause-deadlines,
   * checkpoints. ARGV: pause id, decision JSON, token, the run's checkpoint field, the resolved pause's
   * JSON (empty: none). The resolved pause joins the checkpoint's JSON object as its last member, by
   * text: decoding and encoding it with cjson would change its numbers and empty arrays.
   */
  stepwiseDecision: `
${FENCED('KEYS[6]', 'ARGV[3]')}
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
if redis.call('SADD', KEYS[5], ARGV[1]) == 0 then return 0 end
redis.call('RPUSH', KEYS[4], ARGV[2])
if ARGV[5] == '' then return 0 end
local checkpoint = redis.call('HGET', KEYS[8], ARGV[4])
if checkpoint then redis.call('HSET', KEYS[8], ARGV[4], string.sub(checkpoint, 1, -2) .. ',"resolved":' .. ARGV[5] .. '}') end
return 0`,
  /**
   * KEYS: checkpoints, the conversation's checkpoint set, lease. ARGV: field, checkpoint JSON (empty:
   * delete it), token.
   */
  /**
   * KEYS: engine-states, lease. ARGV: conv_id, state JSON, token. The engine's position (a script's)
   * moves with its run: a deposed owner must not move it.
   */
  stepwiseEngineState: `
${FENCED('KEYS[2]', 'ARGV[3]')}
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 0`,
  stepwiseCheckpoint: `
${FENCED('KEYS[3]', 'ARGV[3]')}
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('SREM', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  redis.call('SADD', KEYS[2], ARGV[1])
end
return 0`,
  /**
   * KEYS: conversations, conversation-order, steps, last-seqs, engine-states, pauses, pause-order,
   * checkpoints, then the conversation's pause set, checkpoint set, frames, turns, turn-order,
   * decisions, decided, then pause-convs and pause-deadlines. ARGV: conv_id.
   */
  stepwiseDelete: `
local conv = ARGV[1]
for i = 1, 5 do redis.call(i == 2 and 'ZREM' or 'HDEL', KEYS[i], conv) end
for _, id in ipairs(redis.call('SMEMBERS', KEYS[9])) do
  redis.call('HDEL', KEYS[6], id)
  redis.call('ZREM', KEYS[7], id)
  redis.call('ZREM', KEYS[17], id)
  redis.call('HDEL', KEYS[16], id)
end
for _, id in ipairs(redis.call('SMEMBERS', KEYS[15])) do redis.call('HDEL', KEYS[16], id) end
for _, field in ipairs(redis.call('SMEMBERS', KEYS[10])) do redis.call('HDEL', KEYS[8], field) end
for i = 9, 15 do redis.call('DEL', KEYS[i]) end
return 0`,
} as const;

export type ScriptName = keyof typeof SCRIPTS;

/** Teaches a client (and its pipelines and transactions) the scripts; keys are passed per call. */
export function defineScripts(client: Redis): void {
  for (const [name, lua] of Object.entries(SCRIPTS)) client.defineCommand(name, { lua });
}

/**
 * Queues one script call on a transaction. `defineCommand` adds methods ioredis cannot type, so the
 * one cast lives here: with no fixed key count, the call is (numkeys, ...keys, ...args).
 */
export function callScript(target: ChainableCommander, name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): void {
  const method = (target as unknown as Record<ScriptName, (...values: (string | number)[]) => ChainableCommander>)[name];
  method.call(target, keys.length, ...keys, ...args);
}
