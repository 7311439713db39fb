import { type FrameEvent, type StoredFrame } from '../core/store.js';
import { StoreSequenceError } from '../core/store-errors.js';

/**
 * Checks that a batch continues each conversation's log (first seq = last + 1, then +1 each) and
 * returns each conversation's new last seq; nothing is changed when it does not.
 * Every adapter checks the same way, so "never reused, never skipped" holds whatever is behind the port.
 */
export function continueSequences(
  frames: readonly StoredFrame<FrameEvent>[],
  lastSeqOf: (convId: string) => number,
): Map<string, number> | StoreSequenceError {
  const last = new Map<string, number>();
  for (const { seq, event } of frames) {
    const convId = event.conv_id;
    const expected = (last.get(convId) ?? lastSeqOf(convId)) + 1;
    if (seq !== expected) return new StoreSequenceError(convId, expected, seq);
    last.set(convId, seq);
  }
  return last;
}
