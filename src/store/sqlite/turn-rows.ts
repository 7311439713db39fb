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
/** A row of `turns` as a raw statement gives it: conversation, turn id, the JSON of its blocks. */
export type TurnTuple = readonly [convId: string, turnId: string, blocks: string];
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
  const turn = { id };
  Object.defineProperty(turn, ROWS, { value: { base, segments }, writable: true });
  return Object.defineProperty(turn, 'blocks', LAZY_BLOCKS) as Turn;
};

/** Where a lazy turn keeps its rows until its blocks are read: not enumerable, so copies and JSON see its `id` and `blocks` alone. */
const ROWS = Symbol('rows');
type LazyTurn = { readonly id: string; [ROWS]: { readonly base: string; readonly segments: readonly SegmentRow[] } | undefined };

/**
 * One getter for every lazy turn, reading the turn it is called on: a getter of each turn's own gave
 * each turn its own hidden class, a closure and its context, which a restart made for every turn of
 * the store and then collected. Once read, the blocks are the turn's own and its rows can go.
 */
const LAZY_BLOCKS: PropertyDescriptor = Object.freeze({
  enumerable: true,
  configurable: true,
  get(this: LazyTurn): Block[] {
    const rows = this[ROWS] as NonNullable<LazyTurn[typeof ROWS]>;
    const blocks = joinTurn(this.id, rows.base, rows.segments);
    Object.defineProperty(this, 'blocks', { value: blocks, enumerable: true, configurable: true });
    this[ROWS] = undefined;
    return blocks;
  },
});

/** A conversation's turn's segments (rows sorted by conversation, turn, start); none for most turns. */
export type SegmentsOf = (convId: string, turnId: string) => readonly SegmentRow[];

export function segmentsIndex(segmentRows: readonly SegmentRow[]): SegmentsOf {
  // By conversation, then turn: no key string to build per turn, and none to look up for a conversation without segments.
  const segmentsOf = new Map<string, Map<string, SegmentRow[]>>();
  for (const row of segmentRows) {
    let turns = segmentsOf.get(row.conv_id);
    if (!turns) segmentsOf.set(row.conv_id, (turns = new Map()));
    const list = turns.get(row.turn_id);
    if (list) list.push(row);
    else turns.set(row.turn_id, [row]);
  }
  return segmentsOf.size === 0 ? () => NO_SEGMENTS : (convId, turnId) => segmentsOf.get(convId)?.get(turnId) ?? NO_SEGMENTS;
}

/** Turns in order, each with its blocks joined from its segments, by conversation. */
export function turnsFromRows(rows: Iterable<TurnTuple>, segmentRows: readonly SegmentRow[], turnOf: TurnOf): Map<string, Turn[]> {
  const segmentsOf = segmentsIndex(segmentRows);
  const turnsOf = new Map<string, Turn[]>();
  for (const [convId, id, blocks] of rows) {
    let list = turnsOf.get(convId);
    if (!list) turnsOf.set(convId, (list = []));
    list.push(turnOf(id, blocks, segmentsOf(convId, id)));
  }
  return turnsOf;
}

const NO_SEGMENTS: readonly SegmentRow[] = Object.freeze([]);
