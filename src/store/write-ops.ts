import type { ConversationRecord, DecisionRecord, FrameEvent, JsonValue, RunCheckpoint, StepSetting, StoredFrame, StoredPause } from '../core/store.js';
import type { Turn } from '../core/turns.js';

/** One queued write, applied in order inside its batch's transaction. */
export type WriteOp =
  | { readonly kind: 'conversation'; readonly record: ConversationRecord }
  | { readonly kind: 'step'; readonly conv_id: string; readonly step: StepSetting }
  | { readonly kind: 'turn'; readonly conv_id: string; readonly turn: Turn }
  | { readonly kind: 'frames'; readonly frames: readonly StoredFrame<FrameEvent>[] }
  | { readonly kind: 'pause'; readonly pause: StoredPause }
  | { readonly kind: 'decision'; readonly decision: DecisionRecord }
  | { readonly kind: 'checkpoint'; readonly checkpoint: RunCheckpoint }
  | { readonly kind: 'checkpoint-deleted'; readonly conv_id: string; readonly inference_id: string }
  | { readonly kind: 'engine-state'; readonly conv_id: string; readonly state: JsonValue }
  | { readonly kind: 'conversation-deleted'; readonly conv_id: string };

/** The row a write sets: a later write with the same key replaces it. */
function keyOf(op: WriteOp): string | undefined {
  switch (op.kind) {
    case 'turn':
      return `turn\u0000${op.conv_id}\u0000${op.turn.id}`;
    case 'checkpoint':
      return `checkpoint\u0000${op.checkpoint.conv_id}\u0000${op.checkpoint.inference_id}`;
    case 'checkpoint-deleted':
      return `checkpoint\u0000${op.conv_id}\u0000${op.inference_id}`;
    case 'engine-state':
      return `engine\u0000${op.conv_id}\u0000`;
    case 'step':
      return `step\u0000${op.conv_id}\u0000`;
    default:
      return undefined;
  }
}

/**
 * The writes of a batch that still matter once it commits as a whole: a turn, checkpoint, engine
 * state or step setting written again later in the batch is written once, in the place of its
 * first write (so a turn keeps its order) with the content of its last. A run that goes through
 * several phases in one tick then serialises its growing turn once, not once per phase.
 * Moving a write earlier is safe because nothing else in the batch reads or sets its row, except a
 * whole conversation record (which sets the step setting) and a delete: past those nothing moves.
 * A conversation record is written once, in the place of its last write.
 */
export function liveOps(ops: readonly WriteOp[]): WriteOp[] {
  const live: (WriteOp | undefined)[] = [];
  const placeOf = new Map<string, number>();
  // A whole conversation record replaces its row, step setting included: the record and step writes
  // before it in the batch are dropped (a run's start writes the record its session's open just did).
  const recordAt = new Map<string, number>();
  let dropped = false;
  for (const op of ops) {
    if (op.kind === 'conversation') {
      const stepKey = `step\u0000${op.record.conv_id}\u0000`;
      for (const place of [recordAt.get(op.record.conv_id), placeOf.get(stepKey)]) {
        if (place === undefined) continue;
        live[place] = undefined;
        dropped = true;
      }
      placeOf.delete(stepKey);
      recordAt.set(op.record.conv_id, live.length);
    }
    if (op.kind === 'conversation-deleted') {
      recordAt.delete(op.conv_id);
      for (const key of [...placeOf.keys()]) if (key.includes(`\u0000${op.conv_id}\u0000`)) placeOf.delete(key);
    }
    const key = keyOf(op);
    const place = key === undefined ? undefined : placeOf.get(key);
    if (place !== undefined) {
      live[place] = op;
      continue;
    }
    if (key !== undefined) placeOf.set(key, live.length);
    live.push(op);
  }
  return dropped ? live.filter((op) => op !== undefined) : (live as WriteOp[]);
}
