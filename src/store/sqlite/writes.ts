import type { Database } from 'better-sqlite3';
import { toJsonText } from '../../core/json.js';
import type { FrameEvent, StoredFrame } from '../../core/store.js';
import type { Retention } from '../retention.js';
import { liveOps, type WriteOp } from '../write-ops.js';
import { createFrameWriter } from './frame-writes.js';
import { createRowWriter } from './row-writes.js';
import { createTurnWriter } from './turn-segments.js';

/** Applies a batch of writes in one transaction, with statements prepared once. */
export interface BatchWriter {
  /** Writes one batch in one transaction. */
  (ops: readonly WriteOp[]): void;
  /** Drops what is remembered of a conversation's turns to write them faster (its session closed). */
  forget(convId: string): void;
}

export function createBatchWriter(db: Database, retention: Retention): BatchWriter {
  const writeFrames = createFrameWriter(db, retention);

  // A run's turn and checkpoint hold the same blocks array: serialised once per batch, not per write
  // (the turn grows every phase, so serialising it twice was a large part of the batch's JSON).
  const blocksJson = new Map<readonly unknown[], string>();
  const jsonOfBlocks = (blocks: readonly unknown[]): string => {
    let json = blocksJson.get(blocks);
    if (json === undefined) blocksJson.set(blocks, (json = toJsonText(blocks)));
    return json;
  };
  // A checkpoint of the blocks its turn was written with in this batch (the runtime writes a run's
  // turn and checkpoint from one array at every phase boundary) leaves them to its turn's rows
  // instead of writing the whole turn a second time. The turn grows every step and, on a server,
  // each boundary is a batch of its own, so the second copy cost WAL pages at every boundary (pages,
  // not bytes, are what the WAL writes).
  const turns = createTurnWriter(db, jsonOfBlocks);
  const apply = createRowWriter(db, turns, jsonOfBlocks);

  const transaction = db.transaction((ops: readonly WriteOp[]) => {
    // The batch commits atomically, so the frames of all its appends can be written together (fewer,
    // larger chunks) after the other writes; only a delete must see the frames queued before it.
    let frames: StoredFrame<FrameEvent>[] = [];
    for (const op of liveOps(ops)) {
      if (op.kind === 'frames') {
        for (const frame of op.frames) frames.push(frame);
        continue;
      }
      if (op.kind === 'conversation-deleted' && frames.length > 0) {
        writeFrames(frames);
        frames = [];
      }
      apply(op);
    }
    if (frames.length > 0) writeFrames(frames);
  });
  const write = (ops: readonly WriteOp[]): void => {
    try {
      transaction(ops);
      turns.committed();
    } catch (error) {
      turns.forget();
      throw error;
    } finally {
      blocksJson.clear();
    }
  };
  return Object.assign(write, { forget: (convId: string) => turns.forgetConversation(convId) });
}
