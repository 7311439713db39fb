import type { Database, Statement } from 'better-sqlite3';
import type { JsonValue, RunCheckpoint, StoredConversation, StoreSnapshot, UnreadableRow } from '../../core/store.js';
import { StoredRowError } from '../../core/store-errors.js';
import type { Block, Turn } from '../../core/turns.js';
import type { Writable } from '../../core/writable.js';
import { messageOf, parseStored, readBlocks, readCheckpoint, readPause, readRecord, readRows } from '../stored-rows.js';
import { joinTurn, lazyTurn, parsedTurn, turnsFromRows, type SegmentRow, type TurnRow } from './turn-rows.js';

/** A row of `checkpoints`: its blocks are its own, or in its JSON (before version 4), or its turn's. */
interface CheckpointRow {
  readonly conv_id: string;
  readonly inference_id: string;
  readonly checkpoint: string;
  readonly blocks: string | null;
}

/** A record's or a pause's row read again with its key (its JSON `AS json`), to name it when it cannot be read back. */
type KeyedRow = Omit<UnreadableRow, 'error'> & { readonly json: string };

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
  /** A turn's columns (`conv_id`, `turn_id`, `blocks`) and a checkpoint's (`CheckpointRow`), each alone: `columns`. */
  readonly turns: readonly Statement[];
  readonly segments: Statement;
  readonly lastSeqs: Statement;
  readonly pauses: Statement;
  readonly keyedPauses: Statement;
  readonly checkpoints: readonly Statement[];
  readonly engineStates: Statement;
}

function loadQueries(db: Database, where: string): LoadQueries {
  const prepare = (sql: string): Statement => db.prepare(sql);
  const columnsOf = (table: string, order: string, names: readonly string[]): Statement[] =>
    names.map((name) => prepare(`SELECT ${name} FROM ${table} ${where} ORDER BY ${order}`).pluck());
  return {
    records: prepare(`SELECT record FROM conversations ${where} ORDER BY created_at, rowid`).pluck(),
    keyedRecords: prepare(`SELECT conv_id, record AS json FROM conversations ${where} ORDER BY created_at, rowid`),
    // In the order they were first written, which is each conversation's order: a scan without a sort.
    turns: columnsOf('turns', 'ord', ['conv_id', 'turn_id', 'blocks']),
    segments: prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks ${where} ORDER BY conv_id, turn_id, start`),
    lastSeqs: prepare(`SELECT conv_id, max(last_seq) AS last_seq FROM frames ${where} GROUP BY conv_id`),
    pauses: prepare(`SELECT pause FROM pauses ${where} ORDER BY rowid`).pluck(),
    keyedPauses: prepare(`SELECT pause_id, conv_id, pause AS json FROM pauses ${where} ORDER BY rowid`),
    checkpoints: columnsOf('checkpoints', 'rowid', ['conv_id', 'inference_id', 'checkpoint', 'blocks']),
    engineStates: prepare(`SELECT conv_id, state FROM engine_state ${where}`),
  };
}

/** Each statement's rows, all read in one transaction (`createRecoveryReads`). */
type Columns = (statements: readonly Statement[], convId: string | undefined) => unknown[][];

export function createRecoveryReads(db: Database): RecoveryReads {
  const turn = db.prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns WHERE conv_id = ? AND turn_id = ?`);
  const turnSegments = db.prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks WHERE conv_id = ? AND turn_id = ? ORDER BY start`);
  const oneCheckpoint = db.prepare(`SELECT conv_id, inference_id, checkpoint, blocks FROM checkpoints WHERE conv_id = ? AND inference_id = ?`);
  const all = loadQueries(db, '');
  const one = loadQueries(db, 'WHERE conv_id = ?');
  /**
   * Turns and checkpoints are read a column at a time (`pluck`) and joined into rows here: the driver
   * builds a row object through the engine's API, which cost about as much as parsing the row's JSON,
   * where an object literal costs next to nothing, and a restart reads every turn and checkpoint. One
   * read transaction, so that every column lists the same rows in the same order.
   */
  const columns: Columns = db.transaction((statements: readonly Statement[], convId: string | undefined) => statements.map((statement) => rowsOf(statement, convId)));
  /** One turn's blocks, read on their own (a checkpoint that shares them). */
  const blocksOfTurn = (checkpoint: RunCheckpoint): Block[] | undefined => {
    const row = turn.get(checkpoint.conv_id, checkpoint.turn_id) as TurnRow | undefined;
    return row && joinTurn(row.id, row.blocks, turnSegments.all(checkpoint.conv_id, checkpoint.turn_id) as SegmentRow[]);
  };
  const checkpointOf = (row: CheckpointRow): RunCheckpoint => toCheckpoint(row, blocksOfTurn);
  return {
    load: (convId) => loadSnapshot(convId === undefined ? all : one, columns, convId),
    turns: (convId) => turnsFromRows(turnRows(columns, one, convId), one.segments.all(convId) as SegmentRow[], parsedTurn).get(convId) ?? [],
    checkpoints: (convId) => readRows(checkpointRows(columns, convId === undefined ? all : one, convId), checkpointOf, undefined, checkpointKey),
    checkpoint: (convId, inferenceId) => {
      const row = oneCheckpoint.get(convId, inferenceId) as CheckpointRow | undefined;
      return row && checkpointOf(row);
    },
  };
}

function turnRows(columns: Columns, queries: LoadQueries, convId: string | undefined): TurnRow[] {
  const [convIds, ids, blocks] = columns(queries.turns, convId) as [string[], string[], string[]];
  return convIds.map((conv_id, index) => ({ conv_id, id: ids[index] as string, blocks: blocks[index] as string }));
}

function checkpointRows(columns: Columns, queries: LoadQueries, convId: string | undefined): CheckpointRow[] {
  const [convIds, inferenceIds, texts, blocks] = columns(queries.checkpoints, convId) as [string[], string[], string[], (string | null)[]];
  return convIds.map((conv_id, index) => ({ conv_id, inference_id: inferenceIds[index] as string, checkpoint: texts[index] as string, blocks: blocks[index] ?? null }));
}

/**
 * Each JSON value of a column read back: the column alone first, and only when one cannot be read,
 * every row again with its key, to name it in `unreadable`. Their keys cost a large share of a
 * restart's reads of records and pauses, for a row that is almost never bad.
 */
function readColumn<T>(fast: Statement, keyed: Statement, convId: string | undefined, read: (json: string, row?: KeyedRow) => T, unreadable: UnreadableRow[]): T[] {
  try {
    return (rowsOf(fast, convId) as string[]).map((json) => read(json));
  } catch {
    return readRows(rowsOf(keyed, convId) as KeyedRow[], (row) => read(row.json, row), unreadable, ({ json: _, ...key }) => key);
  }
}

// One query per table (per column of the largest), grouped here: a restart with 10 000 conversations
// reads a handful of result sets instead of issuing tens of thousands of queries. Blocks are parsed
// when first read (`lazyTurn`): a run restored asleep never reads its own.
// A row that cannot be read back is named in `unreadable`, and recovery ends its run failed.
function loadSnapshot(queries: LoadQueries, columns: Columns, convId: string | undefined): StoreSnapshot {
  const unreadable: UnreadableRow[] = [];
  const turnsOf = turnsFromRows(turnRows(columns, queries, convId), rowsOf(queries.segments, convId) as SegmentRow[], lazyTurn);
  // A running turn's checkpoint shares its turn's blocks (writes.ts): parsed once, with the turn,
  // and copied so that neither sees the other's changes.
  const turnBlocks = (checkpoint: RunCheckpoint): readonly Block[] | undefined =>
    turnsOf.get(checkpoint.conv_id)?.find((turn) => turn.id === checkpoint.turn_id)?.blocks;
  const checkpoints = readRows(checkpointRows(columns, queries, convId), (row) => toCheckpoint(row, turnBlocks, true), unreadable, checkpointKey);
  const seqOf = new Map((rowsOf(queries.lastSeqs, convId) as { conv_id: string; last_seq: number }[]).map((row) => [row.conv_id, row.last_seq]));
  const stateOf = new Map((rowsOf(queries.engineStates, convId) as { conv_id: string; state: string }[]).map((row) => [row.conv_id, row.state]));
  // Completed in place: each record is fresh from JSON.parse, and a copy of each would only cost time.
  const conversations = readColumn(queries.records, queries.keyedRecords, convId, (json, row) => readRecord(json, row?.conv_id) as Writable<StoredConversation>, unreadable);
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
  const pauses = readColumn(queries.pauses, queries.keyedPauses, convId, (json, row) => readPause(json, row?.pause_id), unreadable);
  return { conversations, pauses, checkpoints, ...(unreadable.length > 0 ? { unreadable } : {}) };
}

const rowsOf = (statement: Statement, convId: string | undefined): unknown[] => (convId === undefined ? statement.all() : statement.all(convId));

/**
 * A checkpoint row's own blocks. A function of its own, so that no closure in `toCheckpoint` names the
 * row: its lazy blocks would then hold the row, its JSON text and its keys, for every paused run.
 */
const ownBlocks = (json: string, inferenceId: string): Block[] => readBlocks(json, () => `the blocks of the checkpoint of run ${inferenceId}`);

const checkpointKey = ({ conv_id, inference_id }: CheckpointRow): { conv_id: string; inference_id: string } => ({ conv_id, inference_id });

/**
 * A checkpoint row's blocks: its own, or inside its JSON (written before schema version 4), or its
 * turn's (writes.ts), from `turnBlocks` (at `load`, every turn read at once; else read for it alone).
 * `lazy`: a turn's are copied when first read, as the turn's own are parsed then. A turn that has no
 * row is a `StoredRowError` when they are read: the run cannot go on from a checkpoint without its blocks.
 */
function toCheckpoint(row: CheckpointRow, turnBlocks: (checkpoint: RunCheckpoint) => readonly Block[] | undefined, lazy = false): RunCheckpoint {
  const checkpoint = readCheckpoint(row.checkpoint, row);
  if (row.blocks !== null) return { ...checkpoint, blocks: ownBlocks(row.blocks, row.inference_id) };
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
