import type { Block, Turn } from '../../core/turns.js';
import { unreadableTurn } from '../stored-rows.js';
import { joinSegments } from './turn-segments.js';

/*
 * Turns read back from their rows: a turn's whole write and its segments (turn-segments.ts), joined
 * at once or when first read. Apart from the recovery reads because it is the read side of the
 * segment layout, the same whichever query brought the rows.
 */

/** A row of `turns`, in order, and the segments of its blocks (turn-segments.ts). */
export interface TurnRow {
  readonly conv_id: string;
  readonly id: string;
  /** The JSON of its blocks as last written whole; the segments go on from there. */
  readonly blocks: string;
}
export interface SegmentRow {
  readonly conv_id: string;
  readonly turn_id: string;
  readonly start: number;
  readonly blocks: string;
}

export type TurnOf = (id: string, base: string, segments: readonly SegmentRow[]) => Turn;

/** A turn's blocks, joined from its rows; a `StoredRowError` naming the turn when they cannot be read back. */
export const joinTurn = (id: string, base: string, segments: readonly SegmentRow[]): Block[] => joinSegments(base, segments, () => `the blocks of turn ${id}`);

export const parsedTurn: TurnOf = (id, base, segments) => {
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
export const lazyTurn: TurnOf = (id, base, segments) => {
  let blocks: Block[] | undefined;
  return {
    id,
    get blocks(): Block[] {
      return (blocks ??= joinTurn(id, base, segments));
    },
  };
};

/** Turns in order, each with its blocks joined from its segments (rows sorted by conversation, turn, start). */
export function turnsFromRows(rows: readonly TurnRow[], segmentRows: readonly SegmentRow[], turnOf: TurnOf): Map<string, Turn[]> {
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
