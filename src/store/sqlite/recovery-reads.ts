import type { Database, Statement } from 'better-sqlite3';
import type { JsonValue, RunCheckpoint, StoredConversation, StoredPause, StoreSnapshot, UnreadableRow } from '../../core/store.js';
import { StoredRowError } from '../../core/store-errors.js';
import type { Block, Turn } from '../../core/turns.js';
import type { Writable } from '../../core/writable.js';
import { messageOf, parseStored, readBlocks, readCheckpoint, readPause, readRecord, readRows, unreadableTurn } from '../stored-rows.js';
import { joinSegments } from './turn-segments.js';

/** A row of `checkpoints`: its blocks are its own, or in its JSON (before version 4), or its turn's. */
interface CheckpointRow {
  readonly conv_id: string;
  readonly inference_id: string;
  readonly checkpoint: string;
  readonly blocks: string | null;
}

interface RecordRow {
  readonly conv_id: string;
  readonly record: string;
}
interface PauseRow {
  readonly pause_id: string;
  readonly conv_id: string;
  readonly pause: string;
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

/** What a restart reads to rebuild runs (all at once), and the turns and checkpoints of one conversation. */
export interface RecoveryReads {
  load(convId?: string): StoreSnapshot;
  turns(convId: string): Turn[];
  /** The readable ones (`load` names the others). */
  checkpoints(convId?: string): RunCheckpoint[];
  /** One run's checkpoint; throws a `StoredRowError` when it cannot be read back. */
  checkpoint(convId: string, inferenceId: string): RunCheckpoint | undefined;
}

/** The queries `load` makes, for every conversation or for one (their only parameter). */
interface LoadQueries {
  /** The JSON column alone (`pluck`), and the rows with their keys, read only to name one that cannot be read back. */
  readonly records: Statement;
  readonly keyedRecords: Statement;
  readonly turns: Statement;
  readonly segments: Statement;
  readonly lastSeqs: Statement;
  readonly pauses: Statement;
  readonly keyedPauses: Statement;
  readonly checkpoints: Statement;
  readonly engineStates: Statement;
}

export function createRecoveryReads(db: Database): RecoveryReads {
  const prepare = (sql: string): Statement => db.prepare(sql);
  const turn = prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns WHERE conv_id = ? AND turn_id = ?`);
  const turnSegments = prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks WHERE conv_id = ? AND turn_id = ? ORDER BY start`);
  const checkpointColumns = `SELECT conv_id, inference_id, checkpoint, blocks FROM checkpoints`;
  const oneCheckpoint = prepare(`${checkpointColumns} WHERE conv_id = ? AND inference_id = ?`);
  const all: LoadQueries = {
    records: prepare(`SELECT record FROM conversations ORDER BY created_at, rowid`).pluck(),
    keyedRecords: prepare(`SELECT conv_id, record FROM conversations ORDER BY created_at, rowid`),
    // In the order they were first written, which is each conversation's order: a scan without a sort.
    turns: prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns ORDER BY ord`),
    segments: prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks ORDER BY conv_id, turn_id, start`),
    lastSeqs: prepare(`SELECT conv_id, max(last_seq) AS last_seq FROM frames GROUP BY conv_id`),
    pauses: prepare(`SELECT pause FROM pauses ORDER BY rowid`).pluck(),
    keyedPauses: prepare(`SELECT pause_id, conv_id, pause FROM pauses ORDER BY rowid`),
    checkpoints: prepare(`${checkpointColumns} ORDER BY rowid`),
    engineStates: prepare(`SELECT conv_id, state FROM engine_state`),
  };
  const one: LoadQueries = {
    records: prepare(`SELECT record FROM conversations WHERE conv_id = ?`).pluck(),
    keyedRecords: prepare(`SELECT conv_id, record FROM conversations WHERE conv_id = ?`),
    turns: prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns WHERE conv_id = ? ORDER BY ord`),
    segments: prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks WHERE conv_id = ? ORDER BY turn_id, start`),
    lastSeqs: prepare(`SELECT conv_id, max(last_seq) AS last_seq FROM frames WHERE conv_id = ? GROUP BY conv_id`),
    pauses: prepare(`SELECT pause FROM pauses WHERE conv_id = ? ORDER BY rowid`).pluck(),
    keyedPauses: prepare(`SELECT pause_id, conv_id, pause FROM pauses WHERE conv_id = ? ORDER BY rowid`),
    checkpoints: prepare(`${checkpointColumns} WHERE conv_id = ? ORDER BY rowid`),
    engineStates: prepare(`SELECT conv_id, state FROM engine_state WHERE conv_id = ?`),
  };
  const rowsOf = (statement: Statement, convId: string | undefined): unknown[] => (convId === undefined ? statement.all() : statement.all(convId));
  /**
   * Each JSON value of a column read back: the column alone first, and only when one cannot be read,
   * every row again with its key, to name it in `unreadable`. Their keys cost a large share of a
   * restart's reads of records and pauses, for a row that is almost never bad.
   */
  const readColumn = <K, T>(fast: Statement, keyed: Statement, convId: string | undefined, read: (text: string, key?: K) => T, text: (row: K) => string, unreadable: UnreadableRow[], key: (row: K) => Omit<UnreadableRow, 'error'>): T[] => {
    try {
      return (rowsOf(fast, convId) as string[]).map((json) => read(json));
    } catch {
      return readRows(rowsOf(keyed, convId) as K[], (row) => read(text(row), row), unreadable, key);
    }
  };

  /** One turn's blocks, read on their own (a checkpoint that shares them). */
  const blocksOfTurn = (checkpoint: RunCheckpoint): Block[] | undefined => {
    const row = turn.get(checkpoint.conv_id, checkpoint.turn_id) as TurnRow | undefined;
    return row && joinTurn(row.id, row.blocks, turnSegments.all(checkpoint.conv_id, checkpoint.turn_id) as SegmentRow[]);
  };

  // One query per table, grouped here: a restart with 10 000 conversations reads a handful of result
  // sets instead of issuing tens of thousands of queries. Blocks are parsed when first read
  // (`lazyTurn`): a run restored asleep never reads its own.
  // A row that cannot be read back is named in `unreadable`, and recovery ends its run failed.
  const load = (convId?: string): StoreSnapshot => {
    const queries = convId === undefined ? all : one;
    const unreadable: UnreadableRow[] = [];
    const turnsOf = turnsFromRows(rowsOf(queries.turns, convId) as TurnRow[], rowsOf(queries.segments, convId) as SegmentRow[], lazyTurn);
    // A running turn's checkpoint shares its turn's blocks (writes.ts): parsed once, with the turn,
    // and copied so that neither sees the other's changes.
    const turnBlocks = (checkpoint: RunCheckpoint): readonly Block[] | undefined =>
      turnsOf.get(checkpoint.conv_id)?.find((turn) => turn.id === checkpoint.turn_id)?.blocks;
    const checkpoints = readRows(rowsOf(queries.checkpoints, convId) as CheckpointRow[], (row) => toCheckpoint(row, turnBlocks, true), unreadable, checkpointKey);
    const seqOf = new Map((rowsOf(queries.lastSeqs, convId) as { conv_id: string; last_seq: number }[]).map((row) => [row.conv_id, row.last_seq]));
    const stateOf = new Map((rowsOf(queries.engineStates, convId) as { conv_id: string; state: string }[]).map((row) => [row.conv_id, row.state]));
    // Completed in place: each record is fresh from JSON.parse, and a copy of each would only cost time.
    const conversations = readColumn<RecordRow, Writable<StoredConversation>>(
      queries.records,
      queries.keyedRecords,
      convId,
      (json, row) => readRecord(json, row?.conv_id) as Writable<StoredConversation>,
      (row) => row.record,
      unreadable,
      (row) => ({ conv_id: row.conv_id }),
    );
    for (const conversation of conversations) {
      const id = conversation.conv_id;
      conversation.turns = turnsOf.get(id) ?? [];
      conversation.last_seq = seqOf.get(id) ?? 0;
      const state = stateOf.get(id);
      if (state === undefined) continue;
      try {
        conversation.engine_state = parseStored<JsonValue>(state, () => `the engine state of conversation ${id}`);
      } catch (error) {
        unreadable.push({ conv_id: id, error: messageOf(error) });
      }
    }
    const pauses = readColumn<PauseRow, StoredPause>(
      queries.pauses,
      queries.keyedPauses,
      convId,
      (json, row) => readPause(json, row?.pause_id),
      (row) => row.pause,
      unreadable,
      (row) => ({ conv_id: row.conv_id, pause_id: row.pause_id }),
    );
    return { conversations, pauses, checkpoints, ...(unreadable.length > 0 ? { unreadable } : {}) };
  };

  const checkpointOf = (row: CheckpointRow): RunCheckpoint => toCheckpoint(row, blocksOfTurn);
  return {
    load,
    turns: (convId) => turnsFromRows(one.turns.all(convId) as TurnRow[], one.segments.all(convId) as SegmentRow[], parsedTurn).get(convId) ?? [],
    checkpoints: (convId) => readRows(rowsOf(convId === undefined ? all.checkpoints : one.checkpoints, convId) as CheckpointRow[], checkpointOf, undefined, checkpointKey),
    checkpoint: (convId, inferenceId) => {
      const row = oneCheckpoint.get(convId, inferenceId) as CheckpointRow | undefined;
      return row && checkpointOf(row);
    },
  };
}

type TurnOf = (id: string, base: string, segments: readonly SegmentRow[]) => Turn;

/** A turn's blocks, joined from its rows; a `StoredRowError` naming the turn when they cannot be read back. */
const joinTurn = (id: string, base: string, segments: readonly SegmentRow[]): Block[] => joinSegments(base, segments, () => `the blocks of turn ${id}`);

const parsedTurn: TurnOf = (id, base, segments) => {
  try {
    return { id, blocks: joinTurn(id, base, segments) };
  } catch (error) {
    return unreadableTurn(id, error);
  }
};

/**
 * A turn whose blocks are joined from its JSON when first read, then kept: a restart reads every
 * turn, and most are never looked at before their conversation runs again, if ever. One that cannot
 * be read back throws its `StoredRowError` each time it is read.
 */
const lazyTurn: TurnOf = (id, base, segments) => {
  let blocks: Block[] | undefined;
  return {
    id,
    get blocks(): Block[] {
      return (blocks ??= joinTurn(id, base, segments));
    },
  };
};

/** Turns in order, each with its blocks joined from its segments (rows sorted by conversation, turn, start). */
function turnsFromRows(rows: readonly TurnRow[], segmentRows: readonly SegmentRow[], turnOf: TurnOf): Map<string, Turn[]> {
  // By conversation, then turn: no key string to build per turn, and none to look up for a conversation without segments.
  const segmentsOf = new Map<string, Map<string, SegmentRow[]>>();
  for (const row of segmentRows) {
    let turns = segmentsOf.get(row.conv_id);
    if (!turns) segmentsOf.set(row.conv_id, (turns = new Map()));
    const list = turns.get(row.turn_id);
    if (list) list.push(row);
    else turns.set(row.turn_id, [row]);
  }
  const turnsOf = new Map<string, Turn[]>();
  for (const row of rows) {
    let list = turnsOf.get(row.conv_id);
    if (!list) turnsOf.set(row.conv_id, (list = []));
    list.push(turnOf(row.id, row.blocks, segmentsOf.get(row.conv_id)?.get(row.id) ?? NO_SEGMENTS));
  }
  return turnsOf;
}

const NO_SEGMENTS: readonly SegmentRow[] = Object.freeze([]);

const checkpointKey = ({ conv_id, inference_id }: CheckpointRow): { conv_id: string; inference_id: string } => ({ conv_id, inference_id });

/**
 * A checkpoint row's blocks: its own, or inside its JSON (written before schema version 4), or its
 * turn's (writes.ts), from `turnBlocks` (at `load`, every turn read at once; else read for it alone).
 * `lazy`: a turn's are copied when first read, as the turn's own are parsed then. A turn that has no
 * row is a `StoredRowError` when they are read: the run cannot go on from a checkpoint without its blocks.
 */
function toCheckpoint(row: CheckpointRow, turnBlocks: (checkpoint: RunCheckpoint) => readonly Block[] | undefined, lazy = false): RunCheckpoint {
  const checkpoint = readCheckpoint(row.checkpoint, row);
  if (row.blocks !== null) return { ...checkpoint, blocks: readBlocks(row.blocks, () => `the blocks of the checkpoint of run ${row.inference_id}`) };
  if (checkpoint.blocks !== undefined) return checkpoint;
  const copy = (): Block[] => {
    const blocks = turnBlocks(checkpoint);
    if (!blocks) throw new StoredRowError(`the turn ${checkpoint.turn_id} of run ${checkpoint.inference_id}`, 'it has no stored row');
    return [...blocks];
  };
  if (!lazy) return { ...checkpoint, blocks: copy() };
  let blocks: Block[] | undefined;
  return {
    ...checkpoint,
    get blocks(): Block[] {
      return (blocks ??= copy());
    },
  };
}
