import { AsyncSubject, throwError, type Observable } from 'rxjs';
import type { FrameEvent, StoredFrame } from '../../core/store.js';
import { continueSequences } from '../frame-sequence.js';
import type { WriteOp } from '../write-ops.js';
import type { QueuedAppend } from './writes.js';

/**
 * The appends of the Redis store: each one's own outcome (a refused seq fails that append only, not
 * its batch), and each conversation's last seq as this instance knows it: an append that does not
 * follow it is refused at once. Redis checks again (another instance may have appended), so a
 * missing entry only means the check happens there.
 */
export interface RedisAppends<E extends FrameEvent> {
  /** Checks the frames, queues them by `push`; completes when they committed, errors when refused. */
  append(frames: readonly StoredFrame<E>[], push: (op: WriteOp) => void): Observable<never>;
  /** An append's outcome: committed (no error) or refused. */
  settle(op: object, error: unknown): void;
  /** An append that was not written advanced the seqs it was checked against: let Redis check the next. */
  forget(append: QueuedAppend): void;
  /** The conversation's last seq from now on (Redis's, or 0 for a deleted conversation). */
  follow(convId: string, lastSeq: number): void;
  /** Redis checks the conversation's next append alone. */
  unknown(convId: string): void;
}

export function createRedisAppends<E extends FrameEvent>(): RedisAppends<E> {
  const outcomes = new Map<object, AsyncSubject<never>>();
  const lastSeqs = new Map<string, number>();
  return {
    append: (frames, push) => {
      const last = continueSequences(frames, (convId) => lastSeqs.get(convId) ?? (frames.find((frame) => frame.event.conv_id === convId)?.seq ?? 1) - 1);
      if (last instanceof Error) return throwError(() => last);
      for (const [convId, seq] of last) lastSeqs.set(convId, seq);
      const op: WriteOp = { kind: 'frames', frames };
      const outcome = new AsyncSubject<never>();
      if (frames.length === 0) outcome.complete();
      else {
        outcomes.set(op, outcome);
        push(op);
      }
      return outcome.asObservable();
    },
    settle: (op, error) => {
      const outcome = outcomes.get(op);
      if (!outcome) return;
      outcomes.delete(op);
      if (error === undefined) outcome.complete();
      else outcome.error(error);
    },
    forget: (append) => {
      for (const [convId] of append.convs) lastSeqs.delete(convId);
    },
    follow: (convId, lastSeq) => void lastSeqs.set(convId, lastSeq),
    unknown: (convId) => void lastSeqs.delete(convId),
  };
}
