import type { ConversationRecord, DecisionRecord, FrameEvent, JsonValue, ResolvedPause, RunCheckpoint, StepSetting, Store, StoredFrame, StoredPause } from '../core/store.js';
import type { Turn } from '../core/turns.js';

/** One queued write, applied in order inside its batch's transaction. */
export type WriteOp =
  | { readonly kind: 'conversation'; readonly record: ConversationRecord }
  | { readonly kind: 'step'; readonly conv_id: string; readonly step: StepSetting }
  | { readonly kind: 'turn'; readonly conv_id: string; readonly turn: Turn }
  | { readonly kind: 'frames'; readonly frames: readonly StoredFrame<FrameEvent>[] }
  | { readonly kind: 'pause'; readonly pause: StoredPause }
  | { readonly kind: 'decision'; readonly decision: DecisionRecord; readonly resolved?: ResolvedPause }
  | { readonly kind: 'checkpoint'; readonly checkpoint: RunCheckpoint }
  | { readonly kind: 'checkpoint-deleted'; readonly conv_id: string; readonly inference_id: string }
  | { readonly kind: 'engine-state'; readonly conv_id: string; readonly state: JsonValue }
  | { readonly kind: 'conversation-deleted'; readonly conv_id: string };

/** The row a write sets, as its conversation, table and id in the table: a later write of it replaces it. */
function rowOf(op: WriteOp): readonly [convId: string, table: string, id: string] | undefined {
  switch (op.kind) {
    case 'turn':
      return [op.conv_id, 'turn', op.turn.id];
    case 'checkpoint':
      return [op.checkpoint.conv_id, 'checkpoint', op.checkpoint.inference_id];
    case 'checkpoint-deleted':
      return [op.conv_id, 'checkpoint', op.inference_id];
    case 'engine-state':
      return [op.conv_id, 'engine', ''];
    case 'step':
      return [op.conv_id, 'step', ''];
    default:
      return undefined;
  }
}

/**
 * Where the write of each row sits in a batch, by conversation, table and id: nested maps of the
 * ids' own strings (their hashes are cached) rather than one map of keys joined from them, whose
 * every lookup built and hashed a new string, and a batch makes hundreds of keyed writes.
 */
class Places {
  private readonly byConversation = new Map<string, Map<string, Map<string, number>>>();
  get(convId: string, table: string, id: string): number | undefined {
    return this.byConversation.get(convId)?.get(table)?.get(id);
  }
  set(convId: string, table: string, id: string, place: number): void {
    let tables = this.byConversation.get(convId);
    if (!tables) this.byConversation.set(convId, (tables = new Map()));
    let ids = tables.get(table);
    if (!ids) tables.set(table, (ids = new Map()));
    ids.set(id, place);
  }
  delete(convId: string, table?: string): void {
    if (table === undefined) this.byConversation.delete(convId);
    else this.byConversation.get(convId)?.delete(table);
  }
}

/**
 * The writes of a batch that still matter once it commits as a whole: a turn, checkpoint, engine
 * state or step setting written again later in the batch is written once, in the place of its
 * first write (so a turn keeps its order) with the content of its last. A run that goes through
 * several phases in one tick then serialises its growing turn once, not once per phase.
 * Moving a write earlier is safe because nothing else in the batch reads or sets its row, except a
 * whole conversation record (which sets the step setting), a decision that marks its run's
 * checkpoint, and a delete: past those nothing moves.
 * A conversation record is written once, in the place of its last write.
 */
export function liveOps(ops: readonly WriteOp[]): WriteOp[] {
  const live: (WriteOp | undefined)[] = [];
  const places = new Places();
  // A whole conversation record replaces its row, step setting included: the record and step writes
  // before it in the batch are dropped (a run's start writes the record its session's open just did).
  const recordAt = new Map<string, number>();
  let dropped = false;
  for (const op of ops) {
    if (op.kind === 'conversation') {
      const convId = op.record.conv_id;
      for (const place of [recordAt.get(convId), places.get(convId, 'step', '')]) {
        if (place === undefined) continue;
        live[place] = undefined;
        dropped = true;
      }
      places.delete(convId, 'step');
      recordAt.set(convId, live.length);
    }
    if (op.kind === 'conversation-deleted') {
      recordAt.delete(op.conv_id);
      places.delete(op.conv_id);
    }
    // A decision that marks its run's checkpoint sets that row: a later checkpoint may not move before it.
    if (op.kind === 'decision' && op.resolved) places.delete(op.decision.conv_id, 'checkpoint');
    const row = rowOf(op);
    const place = row === undefined ? undefined : places.get(...row);
    if (place !== undefined) {
      live[place] = op;
      continue;
    }
    if (row !== undefined) places.set(...row, live.length);
    live.push(op);
  }
  return dropped ? live.filter((op) => op !== undefined) : (live as WriteOp[]);
}

/** The port's writes. */
export type StoreWrites<E extends FrameEvent = FrameEvent> = Pick<
  Store<E>,
  | 'putConversation'
  | 'setStep'
  | 'putTurn'
  | 'appendFrames'
  | 'putPause'
  | 'recordDecision'
  | 'putCheckpoint'
  | 'deleteCheckpoint'
  | 'putEngineState'
  | 'deleteConversation'
>;

/** The port's writes that are one queued op each, as an adapter with a write queue offers them. */
export type QueuedWrites = Pick<
  Store,
  'putConversation' | 'setStep' | 'putTurn' | 'putPause' | 'recordDecision' | 'putCheckpoint' | 'deleteCheckpoint' | 'putEngineState'
>;

/** Those writes, each pushed on the queue as its op. */
export function queuedWrites(push: (op: WriteOp) => void): QueuedWrites {
  return {
    putConversation: (record) => push({ kind: 'conversation', record }),
    setStep: (conv_id, step) => push({ kind: 'step', conv_id, step }),
    putTurn: (conv_id, turn) => push({ kind: 'turn', conv_id, turn }),
    putPause: (pause) => push({ kind: 'pause', pause }),
    recordDecision: (decision, resolved) => push(resolved ? { kind: 'decision', decision, resolved } : { kind: 'decision', decision }),
    putCheckpoint: (checkpoint) => push({ kind: 'checkpoint', checkpoint }),
    deleteCheckpoint: (conv_id, inference_id) => push({ kind: 'checkpoint-deleted', conv_id, inference_id }),
    putEngineState: (conv_id, state) => push({ kind: 'engine-state', conv_id, state }),
  };
}

/** The conversation a write belongs to (every write belongs to one). */
export function convOf(op: Exclude<WriteOp, { kind: 'frames' }>): string {
  switch (op.kind) {
    case 'conversation':
      return op.record.conv_id;
    case 'pause':
      return op.pause.conv_id;
    case 'decision':
      return op.decision.conv_id;
    case 'checkpoint':
      return op.checkpoint.conv_id;
    default:
      return op.conv_id;
  }
}

/** A batch's writes by conversation, in order within each; an append of several conversations' frames is split. */
export function byConversation(ops: readonly WriteOp[]): Map<string, WriteOp[]> {
  const groups = new Map<string, WriteOp[]>();
  const add = (convId: string, op: WriteOp): void => {
    let group = groups.get(convId);
    if (!group) groups.set(convId, (group = []));
    group.push(op);
  };
  for (const op of ops) {
    if (op.kind !== 'frames') add(convOf(op), op);
    else for (const frame of op.frames) add(frame.event.conv_id, { kind: 'frames', frames: [frame] });
  }
  return groups;
}
