import type { Database, Statement } from 'better-sqlite3';
import type {
  ConversationRecord,
  DecisionRecord,
  FrameEvent,
  FramePage,
  FrameQuery,
  JsonValue,
  RunCheckpoint,
  StoredConversation,
  StoredFrame,
  StoredPause,
  StoreSnapshot,
} from '../../core/store.js';
import type { Block, Turn } from '../../core/turns.js';
import { decodeChunk } from './frame-chunks.js';

/** The store's queries, prepared once; synchronous (better-sqlite3), wrapped in Promises by the store. */
export interface StoreReads<E extends FrameEvent> {
  load(): StoreSnapshot;
  conversation(convId: string): ConversationRecord | undefined;
  conversations(owner?: string): ConversationRecord[];
  turns(convId: string): Turn[];
  frames(convId: string, query: FrameQuery): FramePage<E>;
  lastSeq(convId: string): number;
  pauses(convId?: string): StoredPause[];
  decisions(convId: string): DecisionRecord[];
  checkpoints(convId?: string): RunCheckpoint[];
  engineState(convId: string): JsonValue | undefined;
}

const parse = <T>(json: string): T => JSON.parse(json) as T;
const parseAll = <T>(statement: Statement, ...params: unknown[]): T[] => (statement.all(...params) as string[]).map((json) => parse<T>(json));

export function createStoreReads<E extends FrameEvent>(db: Database): StoreReads<E> {
  const prepare = (sql: string): Statement => db.prepare(sql);
  const conversation = prepare(`SELECT record FROM conversations WHERE conv_id = ?`).pluck();
  const allConversations = prepare(`SELECT record FROM conversations ORDER BY created_at, rowid`).pluck();
  const ownersConversations = prepare(`SELECT record FROM conversations WHERE owner = ? ORDER BY created_at, rowid`).pluck();
  const turns = prepare(`SELECT turn_id AS id, blocks FROM turns WHERE conv_id = ? ORDER BY ord`);
  // In the order they were first written, which is each conversation's order: a scan without a sort.
  const allTurns = prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns ORDER BY ord`);
  const chunks = prepare(`SELECT first_seq, shared, events FROM frames WHERE conv_id = ? AND last_seq > ? ORDER BY last_seq`);
  // The newest chunk holds the last seq: one index probe (conv_id, last_seq) per conversation.
  const lastSeq = prepare(`SELECT max(last_seq) FROM frames WHERE conv_id = ?`).pluck();
  const allLastSeqs = prepare(`SELECT conv_id, max(last_seq) AS last_seq FROM frames GROUP BY conv_id`);
  const pauses = prepare(`SELECT pause FROM pauses WHERE conv_id = ? ORDER BY rowid`).pluck();
  const allPauses = prepare(`SELECT pause FROM pauses ORDER BY rowid`).pluck();
  const decisions = prepare(`SELECT decision FROM decisions WHERE conv_id = ? ORDER BY id`).pluck();
  const checkpoints = prepare(`SELECT checkpoint, blocks FROM checkpoints WHERE conv_id = ? ORDER BY rowid`);
  const allCheckpoints = prepare(`SELECT checkpoint, blocks FROM checkpoints ORDER BY rowid`);
  const engineState = prepare(`SELECT state FROM engine_state WHERE conv_id = ?`).pluck();
  const allEngineStates = prepare(`SELECT conv_id, state FROM engine_state`);

  const toTurn = (row: { id: string; blocks: string }): Turn => ({ id: row.id, blocks: parse<Block[]>(row.blocks) });
  // Blocks NULL: written before schema version 4, with the blocks inside the checkpoint's JSON.
  const toCheckpoints = (rows: unknown[]): RunCheckpoint[] =>
    (rows as { checkpoint: string; blocks: string | null }[]).map((row) => {
      const checkpoint = parse<RunCheckpoint>(row.checkpoint);
      return row.blocks === null ? checkpoint : { ...checkpoint, blocks: parse<Block[]>(row.blocks) };
    });

  // One query per table, grouped here: a restart with 10 000 conversations reads a handful of result
  // sets instead of issuing tens of thousands of queries.
  const load = (): StoreSnapshot => {
    const checkpoints = toCheckpoints(allCheckpoints.all());
    // A running turn's blocks are its checkpoint's (both written from one array in one batch): parsed
    // once, from the checkpoint, not twice (10 000 paused runs at `restart_recover`).
    const runningBlocks = new Map(checkpoints.map((checkpoint) => [`${checkpoint.conv_id}\u0000${checkpoint.turn_id}`, checkpoint.blocks]));
    const turnsOf = new Map<string, Turn[]>();
    for (const row of allTurns.all() as { conv_id: string; id: string; blocks: string }[]) {
      let list = turnsOf.get(row.conv_id);
      if (!list) turnsOf.set(row.conv_id, (list = []));
      const blocks = runningBlocks.get(`${row.conv_id}\u0000${row.id}`);
      list.push(blocks === undefined ? toTurn(row) : { id: row.id, blocks: [...blocks] });
    }
    const seqOf = new Map((allLastSeqs.all() as { conv_id: string; last_seq: number }[]).map((row) => [row.conv_id, row.last_seq]));
    const stateOf = new Map((allEngineStates.all() as { conv_id: string; state: string }[]).map((row) => [row.conv_id, row.state]));
    const conversations = parseAll<ConversationRecord>(allConversations).map((record): StoredConversation => {
      const state = stateOf.get(record.conv_id);
      return {
        ...record,
        turns: turnsOf.get(record.conv_id) ?? [],
        last_seq: seqOf.get(record.conv_id) ?? 0,
        ...(state === undefined ? {} : { engine_state: parse<JsonValue>(state) }),
      };
    });
    return { conversations, pauses: parseAll<StoredPause>(allPauses), checkpoints };
  };

  return {
    load,
    conversation: (convId) => {
      const json = conversation.get(convId) as string | undefined;
      return json === undefined ? undefined : parse<ConversationRecord>(json);
    },
    conversations: (owner) =>
      owner === undefined ? parseAll<ConversationRecord>(allConversations) : parseAll<ConversationRecord>(ownersConversations, owner),
    turns: (convId) => (turns.all(convId) as { id: string; blocks: string }[]).map(toTurn),
    frames: (convId, { since_seq = 0, limit = Number.POSITIVE_INFINITY } = {}) => {
      const page: StoredFrame<E>[] = [];
      // Chunks in order, read one at a time, until the page is full.
      for (const row of chunks.iterate(convId, since_seq) as Iterable<{ first_seq: number; shared: string | null; events: string }>) {
        const events = decodeChunk<E>(row.shared, row.events);
        for (let index = Math.max(0, since_seq + 1 - row.first_seq); index < events.length && page.length < limit; index += 1) {
          page.push({ seq: row.first_seq + index, event: events[index] as E });
        }
        if (page.length >= limit) break;
      }
      return { frames: page, last_seq: (lastSeq.get(convId) as number | null) ?? 0 };
    },
    lastSeq: (convId) => (lastSeq.get(convId) as number | null) ?? 0,
    pauses: (convId) => (convId === undefined ? parseAll<StoredPause>(allPauses) : parseAll<StoredPause>(pauses, convId)),
    decisions: (convId) => parseAll<DecisionRecord>(decisions, convId),
    checkpoints: (convId) => toCheckpoints(convId === undefined ? allCheckpoints.all() : checkpoints.all(convId)),
    engineState: (convId) => {
      const json = engineState.get(convId) as string | undefined;
      return json === undefined ? undefined : parse<JsonValue>(json);
    },
  };
}
