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

/** A row of `checkpoints`, with its turn's blocks where it has none of its own (not read at `load`). */
interface CheckpointRow {
  readonly checkpoint: string;
  readonly blocks: string | null;
  readonly turn_blocks?: string | null;
}

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
  // A checkpoint without blocks of its own has its turn's (writes.ts): that row's, found by its ids.
  const checkpointRows = `SELECT c.checkpoint, c.blocks, CASE WHEN c.blocks IS NULL THEN t.blocks END AS turn_blocks
     FROM checkpoints c LEFT JOIN turns t ON t.conv_id = c.conv_id AND t.turn_id = json_extract(c.checkpoint, '$.turn_id')`;
  const checkpoints = prepare(`${checkpointRows} WHERE c.conv_id = ? ORDER BY c.rowid`);
  const allCheckpointsWithTurns = prepare(`${checkpointRows} ORDER BY c.rowid`);
  // At `load`, where every turn is parsed anyway.
  const allCheckpoints = prepare(`SELECT checkpoint, blocks FROM checkpoints ORDER BY rowid`);
  const engineState = prepare(`SELECT state FROM engine_state WHERE conv_id = ?`).pluck();
  const allEngineStates = prepare(`SELECT conv_id, state FROM engine_state`);

  const toTurn = (row: { id: string; blocks: string }): Turn => ({ id: row.id, blocks: parse<Block[]>(row.blocks) });
  /**
   * A checkpoint row's blocks: its own, or inside its JSON (written before schema version 4), or its
   * turn's, parsed here from `turn_blocks` or taken from `turnBlocks` (already parsed, at `load`).
   */
  const toCheckpoint = (row: CheckpointRow, turnBlocks?: (checkpoint: RunCheckpoint) => readonly Block[] | undefined): RunCheckpoint => {
    const checkpoint = parse<RunCheckpoint>(row.checkpoint);
    if (row.blocks !== null) return { ...checkpoint, blocks: parse<Block[]>(row.blocks) };
    if (checkpoint.blocks !== undefined) return checkpoint;
    const blocks = turnBlocks?.(checkpoint) ?? (row.turn_blocks ? parse<Block[]>(row.turn_blocks) : undefined);
    return { ...checkpoint, blocks: blocks ? [...blocks] : [] };
  };

  // One query per table, grouped here: a restart with 10 000 conversations reads a handful of result
  // sets instead of issuing tens of thousands of queries.
  const load = (): StoreSnapshot => {
    const turnsOf = new Map<string, Turn[]>();
    for (const row of allTurns.all() as { conv_id: string; id: string; blocks: string }[]) {
      let list = turnsOf.get(row.conv_id);
      if (!list) turnsOf.set(row.conv_id, (list = []));
      list.push(toTurn(row));
    }
    // A running turn's checkpoint shares its turn's blocks (writes.ts): parsed once, with the turns
    // (10 000 paused runs at `restart_recover`), and copied so that neither sees the other's changes.
    const turnBlocks = (checkpoint: RunCheckpoint): readonly Block[] | undefined =>
      turnsOf.get(checkpoint.conv_id)?.find((turn) => turn.id === checkpoint.turn_id)?.blocks;
    const checkpoints = (allCheckpoints.all() as CheckpointRow[]).map((row) => toCheckpoint(row, turnBlocks));
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
    checkpoints: (convId) => ((convId === undefined ? allCheckpointsWithTurns.all() : checkpoints.all(convId)) as CheckpointRow[]).map((row) => toCheckpoint(row)),
    engineState: (convId) => {
      const json = engineState.get(convId) as string | undefined;
      return json === undefined ? undefined : parse<JsonValue>(json);
    },
  };
}
