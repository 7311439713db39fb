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
  WireFrame,
  StoredPause,
  StoreSnapshot,
} from '../../core/store.js';
import type { Block, Turn } from '../../core/turns.js';
import { decodeChunk, splitTexts } from './frame-chunks.js';
import { joinSegments } from './turn-segments.js';

/** The store's queries, prepared once; synchronous (better-sqlite3), wrapped in Promises by the store. */
export interface StoreReads<E extends FrameEvent> {
  load(): StoreSnapshot;
  conversation(convId: string): ConversationRecord | undefined;
  conversations(owner?: string): ConversationRecord[];
  turns(convId: string): Turn[];
  frames(convId: string, query: FrameQuery): FramePage<E, WireFrame>;
  lastSeq(convId: string): number;
  pauses(convId?: string): StoredPause[];
  decisions(convId: string): DecisionRecord[];
  checkpoints(convId?: string): RunCheckpoint[];
  engineState(convId: string): JsonValue | undefined;
}

const parse = <T>(json: string): T => JSON.parse(json) as T;
const parseAll = <T>(statement: Statement, ...params: unknown[]): T[] => (statement.all(...params) as string[]).map((json) => parse<T>(json));

/** A row of `checkpoints`: its blocks are its own, or in its JSON (before version 4), or its turn's. */
interface CheckpointRow {
  readonly checkpoint: string;
  readonly blocks: string | null;
}

/** A row of `turns`, in order, and the segments of its blocks (turn-segments.ts). */
interface TurnRow {
  readonly conv_id: string;
  readonly id: string;
  /** The JSON of its blocks as last written whole; the segments go on from there. */
  readonly blocks: string;
}
interface SegmentRow {
  readonly conv_id: string;
  readonly turn_id: string;
  readonly start: number;
  readonly blocks: string;
}

export function createStoreReads<E extends FrameEvent>(db: Database): StoreReads<E> {
  const prepare = (sql: string): Statement => db.prepare(sql);
  const conversation = prepare(`SELECT record FROM conversations WHERE conv_id = ?`).pluck();
  const allConversations = prepare(`SELECT record FROM conversations ORDER BY created_at, rowid`).pluck();
  const ownersConversations = prepare(`SELECT record FROM conversations WHERE owner = ? ORDER BY created_at, rowid`).pluck();
  const turns = prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns WHERE conv_id = ? ORDER BY ord`);
  const segments = prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks WHERE conv_id = ? ORDER BY turn_id, start`);
  const allSegments = prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks ORDER BY conv_id, turn_id, start`);
  const turn = prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns WHERE conv_id = ? AND turn_id = ?`);
  const turnSegments = prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks WHERE conv_id = ? AND turn_id = ? ORDER BY start`);
  // In the order they were first written, which is each conversation's order: a scan without a sort.
  const allTurns = prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns ORDER BY ord`);
  const chunks = prepare(`SELECT first_seq, shared, events, texts FROM frames WHERE conv_id = ? AND last_seq > ? ORDER BY last_seq`);
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

  /** Turns in order, each with its blocks joined from its segments (rows sorted by conversation, turn, start). */
  const toTurns = (rows: readonly TurnRow[], segmentRows: readonly SegmentRow[]): Map<string, Turn[]> => {
    const segmentsOf = new Map<string, SegmentRow[]>();
    for (const row of segmentRows) {
      const key = `${row.conv_id}\u0000${row.turn_id}`;
      const list = segmentsOf.get(key);
      if (list) list.push(row);
      else segmentsOf.set(key, [row]);
    }
    const turnsOf = new Map<string, Turn[]>();
    for (const row of rows) {
      let list = turnsOf.get(row.conv_id);
      if (!list) turnsOf.set(row.conv_id, (list = []));
      list.push({ id: row.id, blocks: joinSegments(row.blocks, segmentsOf.get(`${row.conv_id}\u0000${row.id}`) ?? []) });
    }
    return turnsOf;
  };
  /** One turn's blocks, read on their own (a checkpoint that shares them). */
  const blocksOfTurn = (convId: string, turnId: string): Block[] => {
    const row = turn.get(convId, turnId) as TurnRow | undefined;
    return row ? joinSegments(row.blocks, turnSegments.all(convId, turnId) as SegmentRow[]) : [];
  };
  /**
   * A checkpoint row's blocks: its own, or inside its JSON (written before schema version 4), or its
   * turn's (writes.ts), from `turnBlocks` (at `load`, where every turn is read) or read here.
   */
  const toCheckpoint = (row: CheckpointRow, turnBlocks?: (checkpoint: RunCheckpoint) => readonly Block[] | undefined): RunCheckpoint => {
    const checkpoint = parse<RunCheckpoint>(row.checkpoint);
    if (row.blocks !== null) return { ...checkpoint, blocks: parse<Block[]>(row.blocks) };
    if (checkpoint.blocks !== undefined) return checkpoint;
    const blocks = turnBlocks ? turnBlocks(checkpoint) : blocksOfTurn(checkpoint.conv_id, checkpoint.turn_id);
    return { ...checkpoint, blocks: blocks ? [...blocks] : [] };
  };

  // One query per table, grouped here: a restart with 10 000 conversations reads a handful of result
  // sets instead of issuing tens of thousands of queries.
  const load = (): StoreSnapshot => {
    const turnsOf = toTurns(allTurns.all() as TurnRow[], allSegments.all() as SegmentRow[]);
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
    turns: (convId) => toTurns(turns.all(convId) as TurnRow[], segments.all(convId) as SegmentRow[]).get(convId) ?? [],
    frames: (convId, { since_seq = 0, limit = Number.POSITIVE_INFINITY } = {}) => {
      const page: (StoredFrame<E> | WireFrame)[] = [];
      // Chunks in order, read one at a time, until the page is full.
      for (const row of chunks.iterate(convId, since_seq) as Iterable<ChunkRow>) {
        const from = Math.max(0, since_seq + 1 - row.first_seq);
        if (row.texts !== null) pushTexts(page, convId, row.first_seq, splitTexts(row.texts), from, limit);
        else pushEvents(page, row.first_seq, decodeChunk<E>(row.shared, row.events), from, limit);
        if (page.length >= limit) break;
      }
      return { frames: page, last_seq: (lastSeq.get(convId) as number | null) ?? 0 };
    },
    lastSeq: (convId) => (lastSeq.get(convId) as number | null) ?? 0,
    pauses: (convId) => (convId === undefined ? parseAll<StoredPause>(allPauses) : parseAll<StoredPause>(pauses, convId)),
    decisions: (convId) => parseAll<DecisionRecord>(decisions, convId),
    checkpoints: (convId) => ((convId === undefined ? allCheckpoints.all() : checkpoints.all(convId)) as CheckpointRow[]).map((row) => toCheckpoint(row)),
    engineState: (convId) => {
      const json = engineState.get(convId) as string | undefined;
      return json === undefined ? undefined : parse<JsonValue>(json);
    },
  };
}

interface ChunkRow {
  readonly first_seq: number;
  readonly shared: string | null;
  readonly events: string;
  /** Schema version 6: the chunk's wire frames (then `events` is empty). */
  readonly texts: string | null;
}

function pushEvents<E extends FrameEvent>(page: (StoredFrame<E> | WireFrame)[], firstSeq: number, events: readonly E[], from: number, limit: number): void {
  for (let index = from; index < events.length && page.length < limit; index += 1) page.push({ seq: firstSeq + index, event: events[index] as E });
}

function pushTexts(page: { push(frame: WireFrame): void; readonly length: number }, convId: string, firstSeq: number, texts: readonly string[], from: number, limit: number): void {
  for (let index = from; index < texts.length && page.length < limit; index += 1) page.push({ seq: firstSeq + index, conv_id: convId, text: texts[index] as string });
}
