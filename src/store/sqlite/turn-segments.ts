import type { Database, Statement } from 'better-sqlite3';
import type { Block } from '../../core/turns.js';
import { readBlocks, type RowName } from '../stored-rows.js';
import { keepNewest } from '../../core/bounded-map.js';

/**
 * A running turn is written at every phase boundary, and on a server each boundary is a batch of its
 * own: writing the whole turn each time made a run's writes grow with the square of its length (and
 * serialised the whole turn on the loop's thread each time). So a turn is stored as segments: its row
 * in `turns` holds the blocks of its first write (or of a write that changed its first block), and
 * `turn_blocks` (schema version 5) the blocks written since, each from the first one that changed (by
 * identity: the runtime never changes a block in place); a write drops the segments it replaces.
 * Reading joins them: each segment cuts what came before it at its `start` and appends its blocks.
 * A turn written before version 5 is a whole write with no segments.
 *
 * The turn is never written whole again while it grows: that cost a write the size of the whole
 * history every few steps, so a long run's steps grew dearer with its length. Instead, when a turn has
 * `MERGE_AFTER` segments since its last merge, the next write stores one segment from the first of
 * them on: a bounded write (what those few writes added), and a read joins one row per that many writes.
 */

/** Segments written since the last merge before the next write merges them into one. */
const MERGE_AFTER = 16;
/**
 * Conversations whose last committed turn is remembered for the next write's diff; a forgotten one is
 * written whole. One turn each: a conversation writes one running turn at a time, and a turn written
 * after another of its conversation (a new run) is new.
 */
const REMEMBERED_TURNS = 4096;

interface Written {
  readonly turnId: string;
  readonly blocks: readonly unknown[];
  /** Whether the turn has rows in `turn_blocks`. */
  readonly segmented: boolean;
  /** The starts of the segments written since the last merge, in order. */
  readonly tail: readonly number[];
}

export interface TurnWriter {
  /** Stores what changed of a turn since its last committed write; all of it the first time. */
  write(convId: string, turnId: string, blocks: readonly unknown[]): void;
  /** The blocks this batch wrote for a turn, if it wrote it (a checkpoint of the same array shares them). */
  writtenInBatch(convId: string, turnId: string): readonly unknown[] | undefined;
  /** The batch committed: its writes become what the next ones are compared with. */
  committed(): void;
  /** The batch rolled back, or rows went away under it: every turn is written whole next time. */
  forget(): void;
  /** The conversation's session closed or its run hibernated: its turn is written whole next time. */
  forgetConversation(convId: string): void;
}

/** `jsonOf`: the JSON of a list of blocks (the batch writer's, which serialises a turn's array once). */
export function createTurnWriter(db: Database, jsonOf: (blocks: readonly unknown[]) => string): TurnWriter {
  const rows = createTurnRows(db, jsonOf);
  // By conversation: forgetting one is a delete, not a scan of every key.
  const remembered = new Map<string, Written>();
  const staged = new Map<string, Written>();
  const writtenOf = (written: Written | undefined, turnId: string): Written | undefined => (written?.turnId === turnId ? written : undefined);

  return {
    write: (convId, turnId, blocks) => {
      const before = writtenOf(staged.get(convId), turnId) ?? writtenOf(remembered.get(convId), turnId);
      const from = before ? firstChange(before.blocks, blocks) : 0;
      if (before && from === blocks.length && from === before.blocks.length) {
        staged.set(convId, { ...before, blocks });
        return;
      }
      staged.set(convId, before && from > 0 ? rows.segment(convId, turnId, blocks, before, from) : rows.whole(convId, turnId, blocks, before));
    },
    writtenInBatch: (convId, turnId) => writtenOf(staged.get(convId), turnId)?.blocks,
    committed: () => {
      for (const [convId, written] of staged) {
        keepNewest(remembered, convId, written, REMEMBERED_TURNS);
      }
      staged.clear();
    },
    forget: () => {
      staged.clear();
      remembered.clear();
    },
    forgetConversation: (convId) => {
      remembered.delete(convId);
    },
  };
}

interface TurnRows {
  /** The whole turn in its `turns` row, and any segments it had dropped. */
  whole(convId: string, turnId: string, blocks: readonly unknown[], before: Written | undefined): Written;
  /** The blocks from `from` on, in a segment of their own, or merged with the segments since the last merge. */
  segment(convId: string, turnId: string, blocks: readonly unknown[], before: Written, from: number): Written;
}

/**
 * A turn's rows, as the layout above stores them: a whole write, or a segment (merged every
 * `MERGE_AFTER`). Apart from the writer's memory of what was written, which decides which of the two a
 * write is; each answers what the turn's rows now hold.
 */
function createTurnRows(db: Database, jsonOf: (blocks: readonly unknown[]) => string): TurnRows {
  const prepare = (sql: string): Statement => db.prepare(sql);
  // A new turn goes after every turn stored (its rowid, `ord`, is the greatest); a known one keeps its place.
  const putTurn = prepare(
    `INSERT INTO turns (conv_id, turn_id, blocks) VALUES (?, ?, ?) ON CONFLICT (conv_id, turn_id) DO UPDATE SET blocks = excluded.blocks`,
  );
  const dropFrom = prepare(`DELETE FROM turn_blocks WHERE conv_id = ? AND turn_id = ? AND start >= ?`);
  const hasSegments = prepare(`SELECT 1 FROM turn_blocks WHERE conv_id = ? AND turn_id = ? LIMIT 1`).pluck();
  const putSegment = prepare(`INSERT OR REPLACE INTO turn_blocks (conv_id, turn_id, start, blocks) VALUES (?, ?, ?, ?)`);
  return {
    whole: (convId, turnId, blocks, before) => {
      putTurn.run(convId, turnId, jsonOf(blocks));
      // A turn written since the start has segments when it has more than one write; one written
      // before (a run recovered after a restart) may have some. A look first: a DELETE that finds
      // nothing cost a measurable share of a step that starts a turn, the look next to nothing.
      if (before ? before.segmented : hasSegments.get(convId, turnId) !== undefined) dropFrom.run(convId, turnId, 1);
      return { turnId, blocks, segmented: false, tail: NO_STARTS };
    },
    segment: (convId, turnId, blocks, before, from) => {
      // The segments that start at `from` or after are replaced.
      const kept = before.tail.length > 0 && (before.tail.at(-1) as number) >= from ? before.tail.filter((start) => start < from) : before.tail;
      const merge = kept.length >= MERGE_AFTER - 1;
      const start = merge ? (kept[0] as number) : from;
      if (start < before.blocks.length) dropFrom.run(convId, turnId, start + 1);
      putSegment.run(convId, turnId, start, jsonOf(blocks.slice(start)));
      return { turnId, blocks, segmented: true, tail: merge ? NO_STARTS : [...kept, from] };
    },
  };
}

const NO_STARTS: readonly number[] = Object.freeze([]);

/** The index of the first block that is not the same object in both; the shorter length when one extends the other. */
function firstChange(before: readonly unknown[], after: readonly unknown[]): number {
  const common = Math.min(before.length, after.length);
  for (let index = 0; index < common; index += 1) if (before[index] !== after[index]) return index;
  return common;
}

/**
 * One turn's blocks: its last whole write (`base`, JSON), then its segments in `start` order. Each
 * part is checked as it is read (../stored-rows.ts): a `StoredRowError` naming `what` when one cannot be.
 */
export function joinSegments(base: string, segments: readonly { readonly start: number; readonly blocks: string }[], what: RowName): Block[] {
  const blocks = readBlocks(base, what);
  for (const segment of segments) {
    blocks.length = Math.min(blocks.length, segment.start);
    for (const block of readBlocks(segment.blocks, what)) blocks.push(block);
  }
  return blocks;
}
