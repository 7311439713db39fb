import type { Redis } from 'ioredis';
import type { ConversationRecord, JsonValue, RunCheckpoint, StepSetting, StoredConversation, StoredPause, StoreSnapshot, UnreadableRow } from '../../core/store.js';
import type { Block, Turn } from '../../core/turns.js';
import { parseStored, readBlocks, readCheckpoint, readOr, readPause, readRecord, unreadableTurn } from '../stored-rows.js';
import { checkpointKeyOf, type RedisKeys } from './keys.js';
import { execAll, toMap } from './replies.js';

/** What a restart reads to rebuild runs (all at once), and the records, turns, pauses and checkpoints it is made of. */
export interface RecoveryReads {
  load(convId?: string): Promise<StoreSnapshot>;
  /** Every readable record, oldest first (created_at, then id: the ZSET's order). */
  records(): Promise<ConversationRecord[]>;
  turns(convId: string): Promise<Turn[]>;
  /** The readable pending pauses, oldest first, of one conversation or of all. */
  pauses(convId?: string): Promise<StoredPause[]>;
  /** The readable ones (`load` names the others). */
  checkpoints(convId?: string): Promise<RunCheckpoint[]>;
  /** The conversations with an unfinished run: one per stored checkpoint, also one that cannot be read back. */
  unfinished(): Promise<string[]>;
}

/** A conversation's record with its step setting, when one was set after the record. */
export function withStep(json: string, step: string | null | undefined, convId: string): ConversationRecord {
  const record = readRecord(json, convId);
  return step ? { ...record, step: parseStored<StepSetting>(step, () => `the step setting of conversation ${convId}`) } : record;
}

/** Where `load` names what it could not read back; the port's other reads leave such rows out (undefined). */
type Unreadable = UnreadableRow[] | undefined;

export function createRecoveryReads(client: Redis, keys: RedisKeys): RecoveryReads {
  const turns = async (convId: string): Promise<Turn[]> => {
    const own = keys.conversation(convId);
    const [order, blocks] = (await execAll(client.multi().lrange(own.turnOrder, 0, -1).hgetall(own.turns))) as [string[], Record<string, string>];
    return turnsFrom(order, blocks);
  };

  // A handful of commands for the whole service, then one pipeline of two commands per conversation
  // for its turns: a restart with 10 000 conversations is two round trips, not 10 000.
  const load = async (convId?: string): Promise<StoreSnapshot> => {
    const unreadable: UnreadableRow[] = [];
    const [list, [seqs, states], pauses, checkpointList] = await Promise.all([
      recordsOf(client, keys, unreadable, convId),
      perConversation(client, keys, convId),
      pausesOf(client, keys, unreadable, convId),
      checkpointsOf(client, keys, unreadable, convId),
    ]);
    const turnsOf = await turnsOfEach(client, keys, list);
    const conversations = list.map((record, index): StoredConversation => {
      const state = states.get(record.conv_id);
      const what = (): string => `the engine state of conversation ${record.conv_id}`;
      const engineState = state === undefined ? undefined : readOr(() => parseStored<JsonValue>(state, what), unreadable, { conv_id: record.conv_id });
      return {
        ...record,
        turns: turnsOf[index] ?? [],
        last_seq: Number(seqs.get(record.conv_id) ?? 0),
        ...(engineState === undefined ? {} : { engine_state: engineState }),
      };
    });
    return { conversations, pauses, checkpoints: checkpointList, ...(unreadable.length > 0 ? { unreadable } : {}) };
  };

  return {
    load,
    records: () => recordsOf(client, keys, undefined),
    turns,
    pauses: (convId) => pausesOf(client, keys, undefined, convId),
    checkpoints: (convId) => checkpointsOf(client, keys, undefined, convId),
    unfinished: async () => [...new Set((await client.hkeys(keys.checkpoints)).flatMap((field) => checkpointKeyOf(field)?.conv_id ?? []))],
  };
}

/** Records in the ZSET's order (created_at, then id), of all conversations or of `convId`. */
async function recordsOf(client: Redis, keys: RedisKeys, unreadable: Unreadable, convId?: string): Promise<ConversationRecord[]> {
  const read = (id: string, json: string, step: string | null | undefined): ConversationRecord[] => {
    const record = readOr(() => withStep(json, step, id), unreadable, { conv_id: id });
    return record ? [record] : [];
  };
  if (convId !== undefined) {
    const [json, step] = (await execAll(client.multi().hget(keys.conversations, convId).hget(keys.steps, convId))) as [string | null, string | null];
    return json === null ? [] : read(convId, json, step);
  }
  const [order, all, steps] = (await execAll(
    client.multi().zrange(keys.conversationOrder, '0', '-1').hgetall(keys.conversations).hgetall(keys.steps),
  )) as [string[], Record<string, string>, Record<string, string>];
  return order.flatMap((id) => {
    const json = all[id];
    return json === undefined ? [] : read(id, json, steps[id]);
  });
}

/** Pending pauses, oldest first, of all conversations or of `convId`. */
async function pausesOf(client: Redis, keys: RedisKeys, unreadable: Unreadable, convId?: string): Promise<StoredPause[]> {
  const entries = convId === undefined ? await allPauseEntries(client, keys) : await pauseEntriesOf(client, keys, convId);
  const bad: UnreadableRow[] = [];
  const pauses = entries.flatMap(([id, json]) => {
    const pause = readOr(() => readPause(json, id), bad, { conv_id: convId ?? '', pause_id: id });
    return pause ? [pause] : [];
  });
  if (unreadable && bad.length > 0) {
    // In the service's whole list, a pause's conversation is the one the index of every pause made names.
    const convs = convId === undefined ? await client.hmget(keys.pauseConvs, ...bad.map((row) => row.pause_id as string)) : [];
    bad.forEach((row, index) => unreadable.push(convId === undefined ? { ...row, conv_id: convs[index] ?? '' } : row));
  }
  return pauses;
}

/** Checkpoints oldest first, of all conversations or of `convId`, each named by its field. */
async function checkpointsOf(client: Redis, keys: RedisKeys, unreadable: Unreadable, convId?: string): Promise<RunCheckpoint[]> {
  let entries: [string, string | null][];
  if (convId === undefined) entries = Object.entries(await client.hgetall(keys.checkpoints));
  else {
    const fields = await client.smembers(keys.conversation(convId).checkpoints);
    const values = fields.length === 0 ? [] : await client.hmget(keys.checkpoints, ...fields);
    entries = fields.map((field, index) => [field, values[index] ?? null]);
  }
  const list = entries.flatMap(([field, json]) => {
    const key = checkpointKeyOf(field);
    const checkpoint = json === null || !key ? undefined : readOr(() => readCheckpoint(json, key), unreadable, key);
    return checkpoint ? [checkpoint] : [];
  });
  return byTime(list);
}

/** Each conversation's last seq and engine state, of all or of `convId`. */
async function perConversation(client: Redis, keys: RedisKeys, convId?: string): Promise<[Map<string, string>, Map<string, string>]> {
  if (convId === undefined) return Promise.all([client.hgetall(keys.lastSeqs).then(toMap), client.hgetall(keys.engineStates).then(toMap)]);
  const [seq, state] = (await execAll(client.multi().hget(keys.lastSeqs, convId).hget(keys.engineStates, convId))) as [string | null, string | null];
  return [new Map(seq === null ? [] : [[convId, seq]]), new Map(state === null ? [] : [[convId, state]])];
}

/** A conversation's turns in their order, from its order list and its hash of blocks by turn id; one that cannot be read throws when its blocks are. */
function turnsFrom(order: string[], blocks: Record<string, string>): Turn[] {
  return order.flatMap((id) => {
    const json = blocks[id];
    if (json === undefined) return [];
    try {
      return [{ id, blocks: readBlocks(json, () => `the blocks of turn ${id}`) as readonly Block[] }];
    } catch (error) {
      return [unreadableTurn(id, error)];
    }
  });
}

/** Checkpoints carry when they were written: oldest first, as a restart resumes them. */
const byTime = (list: RunCheckpoint[]): RunCheckpoint[] => list.sort((a, b) => a.at_ms - b.at_ms);

/** The turns of each conversation, in one pipeline of two commands per conversation. */
async function turnsOfEach(client: Redis, keys: RedisKeys, records: readonly ConversationRecord[]): Promise<Turn[][]> {
  if (records.length === 0) return [];
  const pipeline = client.pipeline();
  for (const { conv_id } of records) {
    const own = keys.conversation(conv_id);
    pipeline.lrange(own.turnOrder, 0, -1).hgetall(own.turns);
  }
  const replies = (await pipeline.exec()) ?? [];
  return records.map((_, index) => {
    const [orderError, order] = replies[index * 2] ?? [null, []];
    const [blocksError, blocks] = replies[index * 2 + 1] ?? [null, {}];
    if (orderError ?? blocksError) throw orderError ?? blocksError;
    return turnsFrom(order as string[], blocks as Record<string, string>);
  });
}

/** Every pending pause's id and JSON, in the order they were made. */
async function allPauseEntries(client: Redis, keys: RedisKeys): Promise<[string, string][]> {
  const [order, all] = (await execAll(client.multi().zrange(keys.pauseOrder, '0', '-1').hgetall(keys.pauses))) as [string[], Record<string, string>];
  return order.flatMap((id) => (all[id] === undefined ? [] : [[id, all[id]] as [string, string]]));
}

/** A conversation's pending pauses' ids and JSON, in the order they were made. */
async function pauseEntriesOf(client: Redis, keys: RedisKeys, convId: string): Promise<[string, string][]> {
  const ids = await client.smembers(keys.conversation(convId).pauses);
  if (ids.length === 0) return [];
  const [scores, values] = (await execAll(client.multi().zmscore(keys.pauseOrder, ...ids).hmget(keys.pauses, ...ids))) as [(string | null)[], (string | null)[]];
  return ids
    .map((id, index) => ({ id, score: Number(scores[index] ?? Number.POSITIVE_INFINITY), json: values[index] }))
    .filter((entry): entry is { id: string; score: number; json: string } => typeof entry.json === 'string')
    .sort((a, b) => a.score - b.score)
    .map((entry) => [entry.id, entry.json]);
}
