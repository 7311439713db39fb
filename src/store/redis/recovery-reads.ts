import type { Redis } from 'ioredis';
import type { ConversationRecord, JsonValue, RunCheckpoint, StepSetting, StoredConversation, StoredPause, StoreSnapshot } from '../../core/store.js';
import type { Block, Turn } from '../../core/turns.js';
import type { RedisKeys } from './keys.js';
import { execAll, parse, toMap } from './replies.js';

/** What a restart reads to rebuild runs (all at once), and the records, turns, pauses and checkpoints it is made of. */
export interface RecoveryReads {
  load(): Promise<StoreSnapshot>;
  /** Every record, oldest first (created_at, then id: the ZSET's order). */
  records(): Promise<ConversationRecord[]>;
  turns(convId: string): Promise<Turn[]>;
  /** Every pending pause, oldest first. */
  allPauses(): Promise<StoredPause[]>;
  checkpoints(convId?: string): Promise<RunCheckpoint[]>;
}

/** A conversation's record with its step setting, when one was set after the record. */
export function withStep(json: string, step: string | null | undefined): ConversationRecord {
  const record = parse<ConversationRecord>(json);
  return step ? { ...record, step: parse<StepSetting>(step) } : record;
}

export function createRecoveryReads(client: Redis, keys: RedisKeys): RecoveryReads {
  /** Every record, oldest first (created_at, then id: the ZSET's order). */
  const records = async (): Promise<ConversationRecord[]> => {
    const [order, all, steps] = (await execAll(
      client.multi().zrange(keys.conversationOrder, '0', '-1').hgetall(keys.conversations).hgetall(keys.steps),
    )) as [string[], Record<string, string>, Record<string, string>];
    return order.flatMap((convId) => {
      const json = all[convId];
      return json === undefined ? [] : [withStep(json, steps[convId])];
    });
  };

  const turns = async (convId: string): Promise<Turn[]> => {
    const own = keys.conversation(convId);
    const [order, blocks] = (await execAll(client.multi().lrange(own.turnOrder, 0, -1).hgetall(own.turns))) as [string[], Record<string, string>];
    return turnsFrom(order, blocks);
  };

  const allPauses = async (): Promise<StoredPause[]> => {
    const [order, all] = (await execAll(client.multi().zrange(keys.pauseOrder, '0', '-1').hgetall(keys.pauses))) as [string[], Record<string, string>];
    return order.flatMap((id) => (all[id] === undefined ? [] : [parse<StoredPause>(all[id])]));
  };

  const checkpoints = async (convId?: string): Promise<RunCheckpoint[]> => {
    if (convId === undefined) return byTime((await client.hvals(keys.checkpoints)).map((json) => parse<RunCheckpoint>(json)));
    const fields = await client.smembers(keys.conversation(convId).checkpoints);
    if (fields.length === 0) return [];
    const values = await client.hmget(keys.checkpoints, ...fields);
    return byTime(values.flatMap((json) => (json === null ? [] : [parse<RunCheckpoint>(json)])));
  };

  // A handful of commands for the whole service, then one pipeline of two commands per conversation
  // for its turns: a restart with 10 000 conversations is two round trips, not 10 000.
  const load = async (): Promise<StoreSnapshot> => {
    const [list, seqs, states, pauses, checkpointList] = await Promise.all([
      records(),
      client.hgetall(keys.lastSeqs).then(toMap),
      client.hgetall(keys.engineStates).then(toMap),
      allPauses(),
      checkpoints(),
    ]);
    const turnsOf = await turnsOfEach(client, keys, list);
    const conversations = list.map((record, index): StoredConversation => {
      const state = states.get(record.conv_id);
      return {
        ...record,
        turns: turnsOf[index] ?? [],
        last_seq: Number(seqs.get(record.conv_id) ?? 0),
        ...(state === undefined ? {} : { engine_state: parse<JsonValue>(state) }),
      };
    });
    return { conversations, pauses, checkpoints: checkpointList };
  };

  return { load, records, turns, allPauses, checkpoints };
}

/** A conversation's turns in their order, from its order list and its hash of blocks by turn id. */
function turnsFrom(order: string[], blocks: Record<string, string>): Turn[] {
  return order.flatMap((id) => {
    const json = blocks[id];
    return json === undefined ? [] : [{ id, blocks: parse<Block[]>(json) }];
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
