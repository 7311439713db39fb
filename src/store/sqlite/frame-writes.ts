import type { Database } from 'better-sqlite3';
import type { FrameEvent, StoredFrame } from '../../core/store.js';
import type { Retention } from '../retention.js';
import { encodeChunk, joinTexts } from './frame-chunks.js';

/**
 * Writes a batch's frames as chunks (frame-chunks.ts), and deletes the chunks a conversation's
 * retention limit lets go.
 */
export function createFrameWriter(db: Database, retention: Retention): (frames: readonly StoredFrame<FrameEvent>[]) => void {
  const putChunk = db.prepare(`INSERT INTO frames (conv_id, first_seq, last_seq, shared, events) VALUES (?, ?, ?, ?, ?)`);
  const putTexts = db.prepare(`INSERT INTO frames (conv_id, first_seq, last_seq, events, texts) VALUES (?, ?, ?, '', ?)`);
  const trimChunks = db.prepare(`DELETE FROM frames WHERE conv_id = ? AND last_seq < ?`);
  const oldestKept = db.prepare(`SELECT first_seq FROM frames WHERE conv_id = ? ORDER BY last_seq LIMIT 1`).pluck();

  /** Deletes whole chunks older than the newest `retention.max` frames, once a quarter more is stored. */
  const trim = (convId: string, lastSeq: number): void => {
    if (lastSeq - (oldestKept.get(convId) as number) + 1 <= retention.trimAt) return;
    trimChunks.run(convId, lastSeq - retention.max + 1);
  };

  /**
   * One chunk per conversation for the frames of consecutive appends (each checked contiguous when
   * queued): a chunk of wire texts, stored as they are, or of events; a new chunk where that changes.
   */
  const writeFrames = (frames: readonly StoredFrame<FrameEvent>[]): void => {
    const chunks = new Map<string, FrameChunk>();
    const flushChunk = (convId: string, chunk: FrameChunk): void => {
      if (chunk.texts) putTexts.run(convId, chunk.first, chunk.last, joinTexts(chunk.texts));
      else {
        const encoded = encodeChunk(chunk.events);
        putChunk.run(convId, chunk.first, chunk.last, encoded.shared, encoded.events);
      }
    };
    for (const frame of frames) {
      const convId = frame.event.conv_id;
      let chunk = chunks.get(convId);
      if (chunk && (chunk.texts !== undefined) !== (frame.text !== undefined)) flushChunk(convId, chunk);
      else if (chunk) {
        chunk.last = frame.seq;
        if (chunk.texts) chunk.texts.push(frame.text as string);
        else chunk.events.push(frame.event);
        continue;
      }
      chunks.set(convId, (chunk = newChunk(frame)));
    }
    for (const [convId, chunk] of chunks) {
      flushChunk(convId, chunk);
      if (retention.max !== Number.POSITIVE_INFINITY) trim(convId, chunk.last);
    }
  };
  return writeFrames;
}

/** The frames of one conversation in a batch, as their texts or as their events. */
interface FrameChunk {
  readonly first: number;
  last: number;
  readonly texts: string[] | undefined;
  readonly events: FrameEvent[];
}

const newChunk = ({ seq, event, text }: StoredFrame<FrameEvent>): FrameChunk =>
  text === undefined ? { first: seq, last: seq, texts: undefined, events: [event] } : { first: seq, last: seq, texts: [text], events: [] };
