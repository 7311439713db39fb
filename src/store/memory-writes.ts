import { EMPTY, throwError, type Observable } from 'rxjs';
import type { Turn } from '../core/turns.js';
import type { ConversationRecord, DecisionRecord, FrameEvent, JsonValue, RunCheckpoint, StoredFrame, StoredPause } from '../core/store.js';
import { StoreSequenceError } from '../core/store-errors.js';
import { continueSequences } from './frame-sequence.js';
import type { Retention } from './retention.js';
import type { StoreWrites } from './write-ops.js';

/** Everything one conversation id has in the store (its record may be absent: frames can come first). */
export interface ConversationRows<E extends FrameEvent> {
  record?: ConversationRecord;
  /**
   * In order: a turn keeps its place when its blocks are replaced. A list, not a Map: a Map per
   * conversation costs heap for every paused run, and the turn written is almost always the last one.
   */
  turns: Turn[];
  frames: StoredFrame<E>[];
  lastSeq: number;
  readonly decisions: DecisionRecord[];
  engineState?: JsonValue;
  /**
   * One checkpoint per unfinished run, the latest; a conversation has one at a time, seldom more. A
   * short list per conversation rather than one map keyed by a joined string: hashing a freshly
   * joined key at every phase boundary is a cost on the loop's hot path. The first is stored as a
   * one-element list: a `push` onto `[]` reserves 17 slots, held by every paused run.
   */
  checkpoints: RunCheckpoint[];
}

/** What the memory store holds: rows per conversation, and the pending pauses by id. */
export interface MemoryTables<E extends FrameEvent> {
  readonly rows: Map<string, ConversationRows<E>>;
  readonly pauses: Map<string, StoredPause>;
}

/**
 * The memory store's writes, applied at once to `tables` (so `appendFrames` completes synchronously);
 * `writable` throws once the store is closed.
 */
export function createMemoryWrites<E extends FrameEvent>(tables: MemoryTables<E>, retention: Retention, writable: () => void): StoreWrites<E> {
  const { rows, pauses } = tables;
  return {
    putConversation: (conversation) => {
      writable();
      rowsOf(rows, conversation.conv_id).record = conversation;
    },
    setStep: (convId, step) => {
      writable();
      const row = rows.get(convId);
      if (row?.record) row.record = { ...row.record, step };
    },
    putTurn: (convId, turn) => {
      writable();
      putTurn(rowsOf(rows, convId), turn);
    },
    appendFrames: createFrameAppender(rows, retention, writable),
    putPause: (pause) => {
      writable();
      pauses.set(pause.pause_id, pause);
    },
    recordDecision: (decision, resolved) => {
      writable();
      pauses.delete(decision.pause_id);
      const row = rowsOf(rows, decision.conv_id);
      row.decisions.push(decision);
      if (resolved) markResolved(row, decision.inference_id, resolved);
    },
    putCheckpoint: (checkpoint) => {
      writable();
      putCheckpoint(rowsOf(rows, checkpoint.conv_id), checkpoint);
    },
    deleteCheckpoint: (convId, inferenceId) => {
      writable();
      const row = rows.get(convId);
      if (row) dropCheckpoint(row, inferenceId);
    },
    putEngineState: (convId, state) => {
      writable();
      rowsOf(rows, convId).engineState = state;
    },
    deleteConversation: (convId) => {
      writable();
      dropConversation(tables, convId);
    },
  };
}

/**
 * A conversation's rows, made on its first write: a conversation exists in memory by being written to,
 * whichever write comes first (frames can come before the record).
 */
function rowsOf<E extends FrameEvent>(rows: Map<string, ConversationRows<E>>, convId: string): ConversationRows<E> {
  let found = rows.get(convId);
  if (!found) {
    found = { turns: NONE, frames: [], lastSeq: 0, decisions: [], checkpoints: NONE };
    rows.set(convId, found);
  }
  return found;
}

/** Appends checked against each conversation's last seq, trimmed to the retention limit. */
function createFrameAppender<E extends FrameEvent>(
  rows: Map<string, ConversationRows<E>>,
  retention: Retention,
  writable: () => void,
): (frames: readonly StoredFrame<E>[]) => Observable<never> {
  const advance = (row: ConversationRows<E>, seq: number): void => {
    row.lastSeq = seq;
    if (row.frames.length > retention.trimAt) row.frames.splice(0, row.frames.length - retention.max);
  };
  return (frames) => {
    writable();
    const only = frames[0];
    // The server's frame log appends one frame at a time, as the hub publishes: that case, the hot
    // one (once per frame the hub publishes), checks its seq without building a map of last seqs.
    if (only && frames.length === 1) {
      const row = rows.get(only.event.conv_id);
      const expected = (row?.lastSeq ?? 0) + 1;
      if (only.seq !== expected) return throwError(() => new StoreSequenceError(only.event.conv_id, expected, only.seq));
      const target = row ?? rowsOf(rows, only.event.conv_id);
      target.frames.push(only);
      advance(target, only.seq);
      return EMPTY;
    }
    const last = continueSequences(frames, (convId) => rows.get(convId)?.lastSeq ?? 0);
    if (last instanceof Error) return throwError(() => last);
    for (const frame of frames) rowsOf(rows, frame.event.conv_id).frames.push(frame);
    for (const [convId, seq] of last) advance(rowsOf(rows, convId), seq);
    return EMPTY;
  };
}

function putTurn<E extends FrameEvent>(row: ConversationRows<E>, turn: Turn): void {
  const at = lastIndexOfTurn(row.turns, turn.id);
  if (at >= 0) row.turns[at] = turn;
  else row.turns = row.turns.length === 0 ? [turn] : [...row.turns, turn];
}

function putCheckpoint<E extends FrameEvent>(row: ConversationRows<E>, checkpoint: RunCheckpoint): void {
  const at = indexOfRun(row.checkpoints, checkpoint.inference_id);
  if (at >= 0) row.checkpoints[at] = checkpoint;
  else row.checkpoints = row.checkpoints.length === 0 ? [checkpoint] : [...row.checkpoints, checkpoint];
}

/*
 * A conversation's checkpoints, one per unfinished run: each operation is a change of that short list
 * (ConversationRows.checkpoints), kept here so its sharing rules (NONE, one-element lists) are in one place.
 */

/** A decision taken at a run's pause marks that run's checkpoint, if it has one. */
function markResolved<E extends FrameEvent>(row: ConversationRows<E>, inferenceId: string, resolved: RunCheckpoint['resolved']): void {
  const at = indexOfRun(row.checkpoints, inferenceId);
  if (at >= 0) row.checkpoints[at] = { ...(row.checkpoints[at] as RunCheckpoint), resolved };
}

function dropCheckpoint<E extends FrameEvent>(row: ConversationRows<E>, inferenceId: string): void {
  const at = indexOfRun(row.checkpoints, inferenceId);
  if (at >= 0) row.checkpoints = row.checkpoints.length === 1 ? NONE : row.checkpoints.filter((_, i) => i !== at);
}

/** A deleted conversation's rows, and its pauses, which are kept by pause id rather than under it. */
function dropConversation<E extends FrameEvent>(tables: MemoryTables<E>, convId: string): void {
  tables.rows.delete(convId);
  for (const [pauseId, pause] of tables.pauses) if (pause.conv_id === convId) tables.pauses.delete(pauseId);
}

/** The shared empty list a conversation starts with; replaced, never written to (frozen: no module-level mutable state). */
const NONE = Object.freeze([]) as unknown as never[];

/** From the end: the turn being written is the conversation's last, but for a restored or forked history. */
function lastIndexOfTurn(turns: readonly Turn[], turnId: string): number {
  for (let i = turns.length - 1; i >= 0; i -= 1) if (turns[i]?.id === turnId) return i;
  return -1;
}

function indexOfRun(checkpoints: readonly RunCheckpoint[], inferenceId: string): number {
  for (let i = 0; i < checkpoints.length; i += 1) if (checkpoints[i]?.inference_id === inferenceId) return i;
  return -1;
}
