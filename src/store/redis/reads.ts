import type { Redis } from 'ioredis';
import type {
  ConversationRecord,
  DecisionRecord,
  FrameEvent,
  FramePage,
  FrameQuery,
  JsonValue,
  RunCheckpoint,
  StoredFrame,
  WireFrame,
  StoredPause,
  StoreSnapshot,
} from '../../core/store.js';
import type { Turn } from '../../core/turns.js';
import type { RedisKeys } from './keys.js';
import { createRecoveryReads, withStep } from './recovery-reads.js';
import { execAll, parse } from './replies.js';

/** The store's reads; each reads one consistent moment (one MULTI) except `load`'s per-conversation turns. */
export interface RedisReads<E extends FrameEvent> {
  load(convId?: string): Promise<StoreSnapshot>;
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
  /** The conversations with an unfinished run, also one whose checkpoint cannot be read back. */
  unfinished(): Promise<string[]>;
  engineState(convId: string): Promise<JsonValue | undefined>;
}

/**
 * A stream entry `[id, [field, value, …]]`: its seq (the id's first part) and its wire text in field `w`,
 * given on as it is, or its event's JSON in field `e`.
 */
export function frameOf<E extends FrameEvent>(convId: string, [id, [field, value]]: [string, string[]]): StoredFrame<E> | WireFrame {
  const seq = Number.parseInt(id, 10);
  return field === 'w' ? { seq, conv_id: convId, text: value ?? '' } : { seq, event: parse<E>(value ?? 'null') };
}

export function createRedisReads<E extends FrameEvent>(client: Redis, keys: RedisKeys): RedisReads<E> {
  const { load, records, turns, pauses, checkpoints, unfinished } = createRecoveryReads(client, keys);
  return {
    load,
    conversation: async (convId) => {
      const [json, step] = (await execAll(client.multi().hget(keys.conversations, convId).hget(keys.steps, convId))) as [string | null, string | null];
      return json === null ? undefined : withStep(json, step, convId);
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
    lastSeq: async (convId) => Number((await client.hget(keys.lastSeqs, convId)) ?? 0),
    pauses,
    unfinished,
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
