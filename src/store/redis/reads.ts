import type { Redis } from 'ioredis';
import type {
  ConversationRecord,
  DecisionRecord,
  FrameEvent,
  FramePage,
  FrameQuery,
  JsonValue,
  RunCheckpoint,
  StepSetting,
  StoredConversation,
  StoredFrame,
  WireFrame,
  StoredPause,
  StoreSnapshot,
} from '../../core/store.js';
import type { Block, Turn } from '../../core/turns.js';
import type { RedisKeys } from './keys.js';

/** The store's reads; each reads one consistent moment (one MULTI) except `load`'s per-conversation turns. */
export interface RedisReads<E extends FrameEvent> {
  load(): Promise<StoreSnapshot>;
  conversation(convId: string): Promise<ConversationRecord | undefined>;
  conversations(owner?: string): Promise<ConversationRecord[]>;
  turns(convId: string): Promise<Turn[]>;
  frames(convId: string, query: FrameQuery): Promise<FramePage<E, WireFrame>>;
  lastSeq(convId: string): Promise<number>;
  pauses(convId?: string): Promise<StoredPause[]>;
  /** One pending pause by id, without reading the others. */
  pause(pauseId: string): Promise<StoredPause | undefined>;
  /** The conversation of any pause made, pending or resolved. */
  convOfPause(pauseId: string): Promise<string | undefined>;
  decisions(convId: string): Promise<DecisionRecord[]>;
  checkpoints(convId?: string): Promise<RunCheckpoint[]>;
  engineState(convId: string): Promise<JsonValue | undefined>;
}

const parse = <T>(json: string): T => JSON.parse(json) as T;

/**
 * A stream entry `[id, [field, value, …]]`: its seq (the id's first part) and its wire text in field `w`,
 * given on as it is, or its event's JSON in field `e`.
 */
export function frameOf<E extends FrameEvent>(convId: string, [id, [field, value]]: [string, string[]]): StoredFrame<E> | WireFrame {
  const seq = Number.parseInt(id, 10);
  return field === 'w' ? { seq, conv_id: convId, text: value ?? '' } : { seq, event: parse<E>(value ?? 'null') };
}

/** A MULTI's replies, each checked: a failed command fails the read. */
async function execAll(multi: ReturnType<Redis['multi']>): Promise<unknown[]> {
  const replies = (await multi.exec()) ?? [];
  return replies.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}

/** Pairs `[field, value, …]` (HGETALL) into a Map. */
const toMap = (pairs: Record<string, string>): Map<string, string> => new Map(Object.entries(pairs));

export function createRedisReads<E extends FrameEvent>(client: Redis, keys: RedisKeys): RedisReads<E> {
  const withStep = (json: string, step: string | null | undefined): ConversationRecord => {
    const record = parse<ConversationRecord>(json);
    return step ? { ...record, step: parse<StepSetting>(step) } : record;
  };

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

  const turnsFrom = (order: string[], blocks: Record<string, string>): Turn[] =>
    order.flatMap((id) => {
      const json = blocks[id];
      return json === undefined ? [] : [{ id, blocks: parse<Block[]>(json) }];
    });

  const turns = async (convId: string): Promise<Turn[]> => {
    const own = keys.conversation(convId);
    const [order, blocks] = (await execAll(client.multi().lrange(own.turnOrder, 0, -1).hgetall(own.turns))) as [string[], Record<string, string>];
    return turnsFrom(order, blocks);
  };

  const allPauses = async (): Promise<StoredPause[]> => {
    const [order, all] = (await execAll(client.multi().zrange(keys.pauseOrder, '0', '-1').hgetall(keys.pauses))) as [string[], Record<string, string>];
    return order.flatMap((id) => (all[id] === undefined ? [] : [parse<StoredPause>(all[id])]));
  };

  const pausesOf = async (convId: string): Promise<StoredPause[]> => {
    const ids = await client.smembers(keys.conversation(convId).pauses);
    if (ids.length === 0) return [];
    const [scores, values] = (await execAll(client.multi().zmscore(keys.pauseOrder, ...ids).hmget(keys.pauses, ...ids))) as [
      (string | null)[],
      (string | null)[],
    ];
    return ids
      .map((_, index) => ({ score: Number(scores[index] ?? Number.POSITIVE_INFINITY), json: values[index] }))
      .filter((entry): entry is { score: number; json: string } => typeof entry.json === 'string')
      .sort((a, b) => a.score - b.score)
      .map((entry) => parse<StoredPause>(entry.json));
  };

  /** Checkpoints carry when they were written: oldest first, as a restart resumes them. */
  const byTime = (list: RunCheckpoint[]): RunCheckpoint[] => list.sort((a, b) => a.at_ms - b.at_ms);

  const checkpoints = async (convId?: string): Promise<RunCheckpoint[]> => {
    if (convId === undefined) return byTime((await client.hvals(keys.checkpoints)).map((json) => parse<RunCheckpoint>(json)));
    const fields = await client.smembers(keys.conversation(convId).checkpoints);
    if (fields.length === 0) return [];
    const values = await client.hmget(keys.checkpoints, ...fields);
    return byTime(values.flatMap((json) => (json === null ? [] : [parse<RunCheckpoint>(json)])));
  };

  const lastSeq = async (convId: string): Promise<number> => Number((await client.hget(keys.lastSeqs, convId)) ?? 0);

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
    const pipeline = client.pipeline();
    for (const { conv_id } of list) {
      const own = keys.conversation(conv_id);
      pipeline.lrange(own.turnOrder, 0, -1).hgetall(own.turns);
    }
    const replies = list.length === 0 ? [] : ((await pipeline.exec()) ?? []);
    const conversations = list.map((record, index): StoredConversation => {
      const [orderError, order] = replies[index * 2] ?? [null, []];
      const [blocksError, blocks] = replies[index * 2 + 1] ?? [null, {}];
      if (orderError ?? blocksError) throw orderError ?? blocksError;
      const state = states.get(record.conv_id);
      return {
        ...record,
        turns: turnsFrom(order as string[], blocks as Record<string, string>),
        last_seq: Number(seqs.get(record.conv_id) ?? 0),
        ...(state === undefined ? {} : { engine_state: parse<JsonValue>(state) }),
      };
    });
    return { conversations, pauses, checkpoints: checkpointList };
  };

  return {
    load,
    conversation: async (convId) => {
      const [json, step] = (await execAll(client.multi().hget(keys.conversations, convId).hget(keys.steps, convId))) as [string | null, string | null];
      return json === null ? undefined : withStep(json, step);
    },
    conversations: async (owner) => {
      const list = await records();
      return owner === undefined ? list : list.filter((record) => record.owner === owner);
    },
    turns,
    frames: async (convId, { since_seq = 0, limit = Number.POSITIVE_INFINITY } = {}) => {
      const stream = keys.conversation(convId).frames;
      // Entry ids are `<seq>-0`: the range from `since_seq + 1` is every frame after since_seq.
      const range =
        limit === Number.POSITIVE_INFINITY
          ? client.multi().xrange(stream, String(since_seq + 1), '+')
          : client.multi().xrange(stream, String(since_seq + 1), '+', 'COUNT', limit);
      const [entries, last] = (await execAll(range.hget(keys.lastSeqs, convId))) as [[string, string[]][], string | null];
      return { frames: entries.map((entry) => frameOf<E>(convId, entry)), last_seq: Number(last ?? 0) };
    },
    lastSeq,
    pauses: (convId) => (convId === undefined ? allPauses() : pausesOf(convId)),
    pause: async (pauseId) => {
      const json = await client.hget(keys.pauses, pauseId);
      return json === null ? undefined : parse<StoredPause>(json);
    },
    convOfPause: async (pauseId) => (await client.hget(keys.pauseConvs, pauseId)) ?? undefined,
    decisions: async (convId) => (await client.lrange(keys.conversation(convId).decisions, 0, -1)).map((json) => parse<DecisionRecord>(json)),
    checkpoints,
    engineState: async (convId) => {
      const json = await client.hget(keys.engineStates, convId);
      return json === null ? undefined : parse<JsonValue>(json);
    },
  };
}
