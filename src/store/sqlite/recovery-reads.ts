import type { Database, Statement } from 'better-sqlite3';
import type { RunCheckpoint, StoreSnapshot, UnreadableRow } from '../../core/store.js';
import type { Block, Turn } from '../../core/turns.js';
import { readPause, readRows } from '../stored-rows.js';
import { checkpointKey, checkpointRow, lazyTurnBlocks, toCheckpoint, type CheckpointRow, type CheckpointTuple } from './checkpoint-rows.js';
import { readConversations } from './conversation-rows.js';
import { joinTurn, parsedTurn, segmentsIndex, turnsFromRows, type SegmentRow, type TurnRow, type TurnTuple } from './turn-rows.js';

/** A pause's row read again with its key (its JSON `AS json`), to name it when it cannot be read back. */
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
export interface LoadQueries {
  /**
   * Each conversation's key, record, last seq and engine state, in the order recovery brings them back
   * (`RecordTuple`), and the turns of each in the same order (`TurnTuple`), so that each conversation
   * takes its turns as both lists are walked, with no lookup by conversation. Rows as arrays (`raw`).
   */
  readonly records: Statement;
  readonly turns: Statement;
  readonly segments: Statement;
  /** The JSON column alone (`pluck`), and the rows with their keys, read only to name one that cannot be read back. */
  readonly pauses: Statement;
  readonly keyedPauses: Statement;
  /** A `CheckpointTuple` each (`raw`). */
  readonly checkpoints: Statement;
}

function loadQueries(db: Database, where: (table: string) => string): LoadQueries {
  const prepare = (sql: string): Statement => db.prepare(sql);
  // A conversation's last seq is the newest entry of its index of frames, and its engine state a row
  // by its key: the engine's lookups, made for each conversation as it is read, cost less than a map
  // of every conversation's built here and looked up again.
  const lastSeq = `(SELECT max(f.last_seq) FROM frames f WHERE f.conv_id = c.conv_id)`;
  const byAge = `${where('c')} ORDER BY c.created_at, c.rowid`;
  return {
    records: prepare(`SELECT c.conv_id, c.record, ${lastSeq}, e.state FROM conversations c LEFT JOIN engine_state e ON e.conv_id = c.conv_id ${byAge}`).raw(),
    // Each conversation's in the order they were written.
    turns: prepare(`SELECT t.conv_id, t.turn_id, t.blocks FROM conversations c JOIN turns t ON t.conv_id = c.conv_id ${byAge}, t.ord`).raw(),
    segments: prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks ${where('turn_blocks')} ORDER BY conv_id, turn_id, start`),
    pauses: prepare(`SELECT pause FROM pauses ${where('pauses')} ORDER BY rowid`).pluck(),
    keyedPauses: prepare(`SELECT pause_id, conv_id, pause AS json FROM pauses ${where('pauses')} ORDER BY rowid`),
    checkpoints: prepare(`SELECT conv_id, inference_id, checkpoint, blocks FROM checkpoints ${where('checkpoints')} ORDER BY rowid`).raw(),
  };
}

/**
 * Rows are read one at a time from each statement's iterator, and each is parsed and checked as it
 * comes, rather than every row of a table first: a restart reads every row of the store, and a whole
 * table of row texts held until the last was parsed outlived the engine's young generation, which
 * then copied each text twice before it could go. As arrays (`raw`), not objects: the driver builds a
 * row object through the engine's API, which cost about as much as parsing the row's JSON.
 */
export function createRecoveryReads(db: Database): RecoveryReads {
  const turn = db.prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns WHERE conv_id = ? AND turn_id = ?`);
  const turnSegments = db.prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks WHERE conv_id = ? AND turn_id = ? ORDER BY start`);
  const oneCheckpoint = db.prepare(`SELECT conv_id, inference_id, checkpoint, blocks FROM checkpoints WHERE conv_id = ? AND inference_id = ?`);
  const oneTurns = db.prepare(`SELECT conv_id, turn_id, blocks FROM turns WHERE conv_id = ? ORDER BY ord`).raw();
  const all = loadQueries(db, () => '');
  const one = loadQueries(db, (table) => `WHERE ${table}.conv_id = ?`);
  const queriesFor = (convId: string | undefined): LoadQueries => (convId === undefined ? all : one);
  /** One turn's blocks, read on their own (a checkpoint that shares them). */
  const blocksOfTurn = (checkpoint: RunCheckpoint): Block[] | undefined => {
    const row = turn.get(checkpoint.conv_id, checkpoint.turn_id) as TurnRow | undefined;
    return row && joinTurn(row.id, row.blocks, turnSegments.all(checkpoint.conv_id, checkpoint.turn_id) as SegmentRow[]);
  };
  const checkpointOf = (row: CheckpointRow): RunCheckpoint => toCheckpoint(row, blocksOfTurn);
  // One read transaction each, so that every statement sees the same rows.
  return {
    load: db.transaction((convId?: string) => loadSnapshot(queriesFor(convId), convId, blocksOfTurn)),
    turns: db.transaction((convId: string) => turnsFromRows(iterate<TurnTuple>(oneTurns, convId), rowsOf(one.segments, convId) as SegmentRow[], parsedTurn).get(convId) ?? []),
    checkpoints: db.transaction((convId?: string) =>
      readRows(iterate<CheckpointTuple>(queriesFor(convId).checkpoints, convId), (row) => checkpointOf(checkpointRow(row)), undefined, checkpointKey),
    ),
    checkpoint: (convId, inferenceId) => {
      const row = oneCheckpoint.get(convId, inferenceId) as CheckpointRow | undefined;
      return row && checkpointOf(row);
    },
  };
}

// A handful of queries, grouped here: a restart reads a few result sets, not queries per conversation.
// Blocks are parsed when first read (`lazyTurn`): a run restored asleep never reads its own.
// A row that cannot be read back is named in `unreadable`, and recovery ends its run failed.
function loadSnapshot(queries: LoadQueries, convId: string | undefined, blocksOfTurn: (checkpoint: RunCheckpoint) => Block[] | undefined): StoreSnapshot {
  const unreadable: UnreadableRow[] = [];
  const segmentsOf = segmentsIndex(rowsOf(queries.segments, convId) as SegmentRow[]);
  const conversations = readConversations(iterate(queries.records, convId), iterate(queries.turns, convId), segmentsOf, unreadable);
  const lazy = lazyTurnBlocks(conversations, blocksOfTurn);
  const checkpoints = readRows(iterate<CheckpointTuple>(queries.checkpoints, convId), (row) => toCheckpoint(checkpointRow(row), blocksOfTurn, lazy), unreadable, checkpointKey);
  const pauses = readColumn(queries.pauses, queries.keyedPauses, convId, (json, row) => readPause(json, row?.pause_id), unreadable);
  return { conversations, pauses, checkpoints, ...(unreadable.length > 0 ? { unreadable } : {}) };
}

/**
 * Each JSON value of a column read back: the column alone first, and only when one cannot be read,
 * every row again with its key, to name it in `unreadable`. Their keys cost a large share of a
 * restart's reads of pauses, for a row that is almost never bad.
 */
function readColumn<T>(fast: Statement, keyed: Statement, convId: string | undefined, read: (json: string, row?: KeyedRow) => T, unreadable: UnreadableRow[]): T[] {
  const values: T[] = [];
  try {
    for (const json of iterate<string>(fast, convId)) values.push(read(json));
    return values;
  } catch {
    return readRows(rowsOf(keyed, convId) as KeyedRow[], (row) => read(row.json, row), unreadable, ({ json: _, ...key }) => key);
  }
}

const rowsOf = (statement: Statement, convId: string | undefined): unknown[] => (convId === undefined ? statement.all() : statement.all(convId));

function iterate<T>(statement: Statement, convId: string | undefined): IterableIterator<T> {
  return (convId === undefined ? statement.iterate() : statement.iterate(convId)) as IterableIterator<T>;
}
