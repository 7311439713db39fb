import { EMPTY, throwError, type Observable } from 'rxjs';
import type { Turn } from '../core/turns.js';
import {
  type ConversationRecord,
  type DecisionRecord,
  type FrameEvent,
  type FramePage,
  type JsonValue,
  type RunCheckpoint,
  type Store,
  type StoredFrame,
  type StoredPause,
  type StoreRetentionConfig,
} from '../core/store.js';
import { StoreClosedError, StoreSequenceError } from '../core/store-errors.js';
import { continueSequences } from './frame-sequence.js';
import { createMemoryGrants } from './memory-grants.js';
import { resolveRetention } from './retention.js';

/** Options of the memory store. */
export type MemoryStoreConfig = StoreRetentionConfig;

/** Everything one conversation id has in the store (its record may be absent: frames can come first). */
interface ConversationRows<E extends FrameEvent> {
  record?: ConversationRecord;
  /**
   * In order: a turn keeps its place when its blocks are replaced. A list, not a Map: a conversation's
   * Map cost 0.2 KB of `paused_heap_per_run`, and the turn written is almost always the last one.
   */
  turns: Turn[];
  frames: StoredFrame<E>[];
  lastSeq: number;
  readonly decisions: DecisionRecord[];
  engineState?: JsonValue;
  /**
   * One checkpoint per unfinished run, the latest; a conversation has one at a time, seldom more. A
   * short list per conversation rather than one map keyed by a joined string: hashing a freshly
   * joined key at every phase boundary showed in `loop_step`'s profile. The first is stored as a
   * one-element list: a `push` onto `[]` reserves 17 slots (0.13 KB per paused run).
   */
  checkpoints: RunCheckpoint[];
}

/**
 * The memory store: today's behaviour, nothing survives the process. Writes apply at once, so
 * `appendFrames` completes synchronously and the hub keeps its timing. Values are kept by reference
 * (they are immutable by convention), which is what makes it as cheap as having no store.
 */
export function createMemoryStore<E extends FrameEvent = FrameEvent>(config: MemoryStoreConfig = {}): Store<E> {
  const retention = resolveRetention(config, 'createMemoryStore');
  const rows = new Map<string, ConversationRows<E>>();
  const pauses = new Map<string, StoredPause>();
  let closed = false;

  const rowsOf = (convId: string): ConversationRows<E> => {
    let found = rows.get(convId);
    if (!found) {
      found = { turns: NONE, frames: [], lastSeq: 0, decisions: [], checkpoints: NONE };
      rows.set(convId, found);
    }
    return found;
  };
  const writable = (): void => {
    if (closed) throw new StoreClosedError('memory');
  };
  const records = (): ConversationRecord[] =>
    [...rows.values()].flatMap((row) => (row.record ? [row.record] : [])).sort((a, b) => a.created_at - b.created_at);
  const pausesOf = (convId?: string): StoredPause[] =>
    [...pauses.values()].filter((pause) => convId === undefined || pause.conv_id === convId);
  const checkpointsOf = (convId?: string): RunCheckpoint[] =>
    convId === undefined ? [...rows.values()].flatMap((row) => row.checkpoints) : [...(rows.get(convId)?.checkpoints ?? [])];

  const advance = (row: ConversationRows<E>, seq: number): void => {
    row.lastSeq = seq;
    if (row.frames.length > retention.trimAt) row.frames.splice(0, row.frames.length - retention.max);
  };
  const appendFrames = (frames: readonly StoredFrame<E>[]): Observable<never> => {
    writable();
    const only = frames[0];
    // The server's frame log appends one frame at a time, as the hub publishes: that case, the hot
    // one (once per frame in fanout_N), checks its seq without building a map of last seqs.
    if (only && frames.length === 1) {
      const row = rows.get(only.event.conv_id);
      const expected = (row?.lastSeq ?? 0) + 1;
      if (only.seq !== expected) return throwError(() => new StoreSequenceError(only.event.conv_id, expected, only.seq));
      const target = row ?? rowsOf(only.event.conv_id);
      target.frames.push(only);
      advance(target, only.seq);
      return EMPTY;
    }
    const last = continueSequences(frames, (convId) => rows.get(convId)?.lastSeq ?? 0);
    if (last instanceof Error) return throwError(() => last);
    for (const frame of frames) rowsOf(frame.event.conv_id).frames.push(frame);
    for (const [convId, seq] of last) advance(rowsOf(convId), seq);
    return EMPTY;
  };

  return {
    kind: 'memory',
    durable: false,
    grants: createMemoryGrants(),
    putConversation: (conversation) => {
      writable();
      rowsOf(conversation.conv_id).record = conversation;
    },
    setStep: (convId, step) => {
      writable();
      const row = rows.get(convId);
      if (row?.record) row.record = { ...row.record, step };
    },
    putTurn: (convId, turn) => {
      writable();
      const row = rowsOf(convId);
      const at = lastIndexOfTurn(row.turns, turn.id);
      if (at >= 0) row.turns[at] = turn;
      else row.turns = row.turns.length === 0 ? [turn] : [...row.turns, turn];
    },
    appendFrames,
    putPause: (pause) => {
      writable();
      pauses.set(pause.pause_id, pause);
    },
    recordDecision: (decision) => {
      writable();
      pauses.delete(decision.pause_id);
      rowsOf(decision.conv_id).decisions.push(decision);
    },
    putCheckpoint: (checkpoint) => {
      writable();
      const row = rowsOf(checkpoint.conv_id);
      const at = indexOfRun(row.checkpoints, checkpoint.inference_id);
      if (at >= 0) row.checkpoints[at] = checkpoint;
      else row.checkpoints = row.checkpoints.length === 0 ? [checkpoint] : [...row.checkpoints, checkpoint];
    },
    deleteCheckpoint: (convId, inferenceId) => {
      writable();
      const row = rows.get(convId);
      const at = row ? indexOfRun(row.checkpoints, inferenceId) : -1;
      if (row && at >= 0) row.checkpoints = row.checkpoints.length === 1 ? NONE : row.checkpoints.filter((_, i) => i !== at);
    },
    putEngineState: (convId, state) => {
      writable();
      rowsOf(convId).engineState = state;
    },
    deleteConversation: (convId) => {
      writable();
      rows.delete(convId);
      for (const pause of pausesOf(convId)) pauses.delete(pause.pause_id);
    },
    flush: () => Promise.resolve(),
    committed$: () => EMPTY,

    load: async () => ({
      conversations: records().map((record) => {
        const row = rowsOf(record.conv_id);
        const engine = row.engineState === undefined ? {} : { engine_state: row.engineState };
        return { ...record, turns: [...row.turns], last_seq: row.lastSeq, ...engine };
      }),
      pauses: pausesOf(),
      checkpoints: checkpointsOf(),
    }),
    conversation: async (convId) => rows.get(convId)?.record,
    conversations: async (owner) => records().filter((record) => owner === undefined || record.owner === owner),
    turns: async (convId) => [...(rows.get(convId)?.turns ?? [])],
    frames: async (convId, { since_seq = 0, limit = Number.POSITIVE_INFINITY } = {}): Promise<FramePage<E>> => {
      const row = rows.get(convId);
      if (!row) return { frames: [], last_seq: 0 };
      const start = row.frames.findIndex((frame) => frame.seq > since_seq);
      return { frames: start < 0 ? [] : row.frames.slice(start, start + limit), last_seq: row.lastSeq };
    },
    lastSeq: async (convId) => rows.get(convId)?.lastSeq ?? 0,
    pauses: async (convId) => pausesOf(convId),
    decisions: async (convId) => [...(rows.get(convId)?.decisions ?? [])],
    checkpoints: async (convId) => checkpointsOf(convId),
    engineState: async (convId) => rows.get(convId)?.engineState,
    close: async () => {
      closed = true;
    },
  };
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
