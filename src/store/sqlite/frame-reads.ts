import type { Database } from 'better-sqlite3';
import type { FrameEvent, FramePage, FrameQuery, StoredFrame, WireFrame } from '../../core/store.js';
import { decodeChunk, splitTexts } from './frame-chunks.js';

/** A conversation's frame log, read from its chunks (frame-chunks.ts). */
export interface FrameReads<E extends FrameEvent> {
  frames(convId: string, query: FrameQuery): FramePage<E, WireFrame>;
  lastSeq(convId: string): number;
}

export function createFrameReads<E extends FrameEvent>(db: Database): FrameReads<E> {
  const chunks = db.prepare(`SELECT first_seq, shared, events, texts FROM frames WHERE conv_id = ? AND last_seq > ? ORDER BY last_seq`);
  // The newest chunk holds the last seq: one index probe (conv_id, last_seq) per conversation.
  const lastSeq = db.prepare(`SELECT max(last_seq) FROM frames WHERE conv_id = ?`).pluck();
  return {
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
