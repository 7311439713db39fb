import type { FrameEvent, StoredFrame } from '../../core/store.js';
import { StoreSequenceError } from '../../core/store-errors.js';
import { continueSequences } from '../frame-sequence.js';

/**
 * Each conversation's last seq, advanced when frames are queued, so the next append is checked
 * against what is queued, not only what is committed. A conversation not known yet is read from the
 * file (`storedLastSeq`) once.
 */
export interface QueuedSeqs {
  lastSeqOf(convId: string): number;
  /** Checks that the frames continue their logs and advances them; returns the refusal, if any (then nothing moved). */
  advance(frames: readonly StoredFrame<FrameEvent>[]): StoreSequenceError | undefined;
  /** A last seq known from elsewhere (a delete: 0); `keep` leaves one already known as it is. */
  set(convId: string, seq: number, keep?: boolean): void;
  /** Read from the file next time (the conversation's session closed). */
  delete(convId: string): void;
  /** Every one read from the file next time (a batch rolled back). */
  clear(): void;
}

export function createQueuedSeqs(storedLastSeq: (convId: string) => number): QueuedSeqs {
  const lastSeqs = new Map<string, number>();
  const lastSeqOf = (convId: string): number => {
    let seq = lastSeqs.get(convId);
    if (seq === undefined) lastSeqs.set(convId, (seq = storedLastSeq(convId)));
    return seq;
  };
  return {
    lastSeqOf,
    advance: (frames) => {
      // The server's frame log appends one frame at a time, many to a batch: that case checks its
      // seq without building a map of last seqs, which every frame would pay for.
      const only = frames.length === 1 ? frames[0] : undefined;
      if (only) {
        const convId = only.event.conv_id;
        const expected = lastSeqOf(convId) + 1;
        if (only.seq !== expected) return new StoreSequenceError(convId, expected, only.seq);
        lastSeqs.set(convId, only.seq);
        return undefined;
      }
      const last = continueSequences(frames, lastSeqOf);
      if (last instanceof Error) return last;
      for (const [convId, seq] of last) lastSeqs.set(convId, seq);
      return undefined;
    },
    set: (convId, seq, keep = false) => {
      if (!keep || !lastSeqs.has(convId)) lastSeqs.set(convId, seq);
    },
    delete: (convId) => void lastSeqs.delete(convId),
    clear: () => lastSeqs.clear(),
  };
}
