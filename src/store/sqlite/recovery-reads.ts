import type { Database, Statement } from 'better-sqlite3';
import type { JsonValue, RunCheckpoint, StoredConversation, StoredPause, StoreSnapshot } from '../../core/store.js';
import type { Block, Turn } from '../../core/turns.js';
import type { Writable } from '../../core/writable.js';
import { parse, parseAll } from './json-rows.js';
import { joinSegments } from './turn-segments.js';

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

/** What a restart reads to rebuild runs (all at once), and the turns and checkpoints of one conversation. */
export interface RecoveryReads {
  load(): StoreSnapshot;
  turns(convId: string): Turn[];
  checkpoints(convId?: string): RunCheckpoint[];
  /** One run's checkpoint. */
  checkpoint(convId: string, inferenceId: string): RunCheckpoint | undefined;
}

export function createRecoveryReads(db: Database): RecoveryReads {
  const prepare = (sql: string): Statement => db.prepare(sql);
  const allConversations = prepare(`SELECT record FROM conversations ORDER BY created_at, rowid`).pluck();
  const turns = prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns WHERE conv_id = ? ORDER BY ord`);
  const segments = prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks WHERE conv_id = ? ORDER BY turn_id, start`);
  const allSegments = prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks ORDER BY conv_id, turn_id, start`);
  const turn = prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns WHERE conv_id = ? AND turn_id = ?`);
  const turnSegments = prepare(`SELECT conv_id, turn_id, start, blocks FROM turn_blocks WHERE conv_id = ? AND turn_id = ? ORDER BY start`);
  // In the order they were first written, which is each conversation's order: a scan without a sort.
  const allTurns = prepare(`SELECT conv_id, turn_id AS id, blocks FROM turns ORDER BY ord`);
  const allLastSeqs = prepare(`SELECT conv_id, max(last_seq) AS last_seq FROM frames GROUP BY conv_id`);
  const allPauses = prepare(`SELECT pause FROM pauses ORDER BY rowid`).pluck();
  const checkpoints = prepare(`SELECT checkpoint, blocks FROM checkpoints WHERE conv_id = ? ORDER BY rowid`);
  const oneCheckpoint = prepare(`SELECT checkpoint, blocks FROM checkpoints WHERE conv_id = ? AND inference_id = ?`);
  const allCheckpoints = prepare(`SELECT checkpoint, blocks FROM checkpoints ORDER BY rowid`);
  const allEngineStates = prepare(`SELECT conv_id, state FROM engine_state`);

  /** One turn's blocks, read on their own (a checkpoint that shares them). */
  const blocksOfTurn = (checkpoint: RunCheckpoint): Block[] => {
    const row = turn.get(checkpoint.conv_id, checkpoint.turn_id) as TurnRow | undefined;
    return row ? joinSegments(row.blocks, turnSegments.all(checkpoint.conv_id, checkpoint.turn_id) as SegmentRow[]) : [];
  };

  // One query per table, grouped here: a restart with 10 000 conversations reads a handful of result
  // sets instead of issuing tens of thousands of queries. Blocks are parsed when first read
  // (`lazyTurn`): a run restored asleep never reads its own (100 000 paused runs at `restart_recover_100k`).
  const load = (): StoreSnapshot => {
    const turnsOf = turnsFromRows(allTurns.all() as TurnRow[], allSegments.all() as SegmentRow[], lazyTurn);
    // A running turn's checkpoint shares its turn's blocks (writes.ts): parsed once, with the turn,
    // and copied so that neither sees the other's changes.
    const turnBlocks = (checkpoint: RunCheckpoint): readonly Block[] | undefined =>
      turnsOf.get(checkpoint.conv_id)?.find((turn) => turn.id === checkpoint.turn_id)?.blocks;
    const checkpoints = (allCheckpoints.all() as CheckpointRow[]).map((row) => toCheckpoint(row, turnBlocks, true));
    const seqOf = new Map((allLastSeqs.all() as { conv_id: string; last_seq: number }[]).map((row) => [row.conv_id, row.last_seq]));
    const stateOf = new Map((allEngineStates.all() as { conv_id: string; state: string }[]).map((row) => [row.conv_id, row.state]));
    // Completed in place: each record is fresh from JSON.parse, and a copy of each would only cost time.
    const conversations = parseAll<Writable<StoredConversation>>(allConversations);
    for (const conversation of conversations) {
      conversation.turns = turnsOf.get(conversation.conv_id) ?? [];
      conversation.last_seq = seqOf.get(conversation.conv_id) ?? 0;
      const state = stateOf.get(conversation.conv_id);
      if (state !== undefined) conversation.engine_state = parse<JsonValue>(state);
    }
    return { conversations, pauses: parseAll<StoredPause>(allPauses), checkpoints };
  };

  return {
    load,
    turns: (convId) => turnsFromRows(turns.all(convId) as TurnRow[], segments.all(convId) as SegmentRow[], parsedTurn).get(convId) ?? [],
    checkpoints: (convId) =>
      ((convId === undefined ? allCheckpoints.all() : checkpoints.all(convId)) as CheckpointRow[]).map((row) => toCheckpoint(row, blocksOfTurn)),
    checkpoint: (convId, inferenceId) => {
      const row = oneCheckpoint.get(convId, inferenceId) as CheckpointRow | undefined;
      return row && toCheckpoint(row, blocksOfTurn);
    },
  };
}

type TurnOf = (id: string, base: string, segments: readonly SegmentRow[]) => Turn;

const parsedTurn: TurnOf = (id, base, segments) => ({ id, blocks: joinSegments(base, segments) });

/**
 * A turn whose blocks are joined from its JSON when first read, then kept: a restart reads every
 * turn, and most are never looked at before their conversation runs again, if ever.
 */
const lazyTurn: TurnOf = (id, base, segments) => {
  let blocks: Block[] | undefined;
  return {
    id,
    get blocks(): Block[] {
      return (blocks ??= joinSegments(base, segments));
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

/**
 * A checkpoint row's blocks: its own, or inside its JSON (written before schema version 4), or its
 * turn's (writes.ts), from `turnBlocks` (at `load`, every turn read at once; else read for it alone).
 * `lazy`: a turn's are copied when first read, as the turn's own are parsed then.
 */
function toCheckpoint(row: CheckpointRow, turnBlocks: (checkpoint: RunCheckpoint) => readonly Block[] | undefined, lazy = false): RunCheckpoint {
  const checkpoint = parse<RunCheckpoint>(row.checkpoint);
  if (row.blocks !== null) return { ...checkpoint, blocks: parse<Block[]>(row.blocks) };
  if (checkpoint.blocks !== undefined) return checkpoint;
  const copy = (): Block[] => [...(turnBlocks(checkpoint) ?? [])];
  if (!lazy) return { ...checkpoint, blocks: copy() };
  let blocks: Block[] | undefined;
  return {
    ...checkpoint,
    get blocks(): Block[] {
      return (blocks ??= copy());
    },
  };
}
