import type { Observable } from 'rxjs';
import type { ResolvedPause, RunCheckpoint, StoreSnapshot } from './checkpoints.js';
import type { GrantStore } from './grants.js';
import type { FrameEvent, FramePage, FrameQuery, StoredFrame } from './store-frames.js';
import type { ConversationRecord, DecisionRecord, JsonValue, StepSetting, StoredPause } from './store-records.js';
import type { Turn } from './turns.js';

export type { CheckpointPhase, ResolvedPause, RunCheckpoint, StoredConversation, StoreSnapshot, UnreadableRow } from './checkpoints.js';
export type { FrameEvent, FramePage, FrameQuery, StoredFrame, WireFrame } from './store-frames.js';
export type {
  ConversationRecord,
  DecisionRecord,
  ForkOrigin,
  JsonValue,
  StepFilter,
  StepSetting,
  StoredPause,
  StoredPauseDecision,
  StoredPausePhase,
  StoredPauseToolCall,
} from './store-records.js';

/**
 * The store port (docs/protocol.md, Durability): what a durable run keeps, and the one interface the runtime writes through.
 * Adapters live in `src/store` (memory, sqlite, redis); nothing above them knows which one is behind it.
 *
 * Shape, and why:
 * - Writes are **queued, in order**, and return at once: the loop never waits on a disk or a network
 *   round trip per event. An adapter commits its queue in batches (SQLite: one transaction per batch;
 *   Redis: one pipeline). Because the queue is ordered, a write that committed implies every write
 *   queued before it committed too (a checkpoint queued before a frame is durable once the frame is).
 * - `appendFrames` returns an Observable that completes when its frames are committed: the server fans
 *   a batch out only then (docs/protocol.md, Durability: "Every frame is committed to the store before any
 *   client receives it").
 *   It is an Observable, not a Promise, so a synchronous store (memory) completes it synchronously and
 *   the hub keeps today's timing in marble tests, while an asynchronous one completes it later.
 * - Reads return Promises: they are made at the edges (server routes, recovery at start), never inside
 *   the loop's operators, and a Redis read is a round trip. A read sees every write queued before it.
 * - Everything stored is plain JSON (no functions, no engines, no Subjects): a store may serialise it.
 */

/** The store port. See the header of this file for the shape of writes, commits and reads. */
export interface Store<E extends FrameEvent = FrameEvent, W = never> {
  /** `memory`, `sqlite`, `redis`: for logs and `--help`, never for branching. */
  readonly kind: string;
  /** False for `memory`: nothing survives the process, so SIGTERM cancels instead of suspending. */
  readonly durable: boolean;
  /** Remembered approvals (docs/protocol.md, Grants), as durable and shared as the rest; absent: kept in the runtime's memory. */
  readonly grants?: GrantStore;

  // Writes: queued in order, committed in batches.
  /** Creates or replaces a conversation's record. */
  putConversation(conversation: ConversationRecord): void;
  /** Step mode on or off, and its filter. */
  setStep(convId: string, step: StepSetting): void;
  /** Appends a turn, or replaces the blocks of a turn already stored (the running turn at each phase). */
  putTurn(convId: string, turn: Turn): void;
  /**
   * Queues frames and returns an Observable that completes, emitting nothing, once they are
   * committed (or errors with why they were not); appends complete in the order they were made. The
   * write happens whether or not it is subscribed. Each conversation's frames must continue its log:
   * the first seq is its last seq + 1, then +1 each; otherwise nothing of this call is written and
   * the Observable errors with a `StoreSequenceError`.
   */
  appendFrames(frames: readonly StoredFrame<E>[]): Observable<never>;
  /** A pause the run waits at (docs/protocol.md, The pause object). */
  putPause(pause: StoredPause): void;
  /**
   * Records a decision in the audit trail and drops the pending pause it resolved. With `resolved`,
   * the run's checkpoint (if it has one) keeps the decision until its next checkpoint, in the same
   * commit: a restart between the two goes on from the pause as decided.
   */
  recordDecision(decision: DecisionRecord, resolved?: ResolvedPause): void;
  /** Replaces the run's checkpoint (one per run: the latest boundary). */
  putCheckpoint(checkpoint: RunCheckpoint): void;
  /** The run ended: it has nothing to resume. */
  deleteCheckpoint(convId: string, inferenceId: string): void;
  /** Opaque per-conversation engine state (the scripted engine's position in its script). */
  putEngineState(convId: string, state: JsonValue): void;
  /** Deletes the conversation and every row of it: turns, frames, pauses, decisions, checkpoints, engine state. */
  deleteConversation(convId: string): void;
  /** Resolves once every write queued before the call is committed. */
  flush(): Promise<void>;
  /**
   * Completes (emitting nothing) once every write queued before the call is committed, waiting while
   * the store is unreachable; errors with `LeaseLostError` when by then this process may not write
   * the conversation's run (another instance of the service owns it). What must be durable before it
   * is said or done waits on it: a decision before its 200, a tool that cannot run twice before it
   * starts (its start is in the checkpoint). A synchronous store (memory) completes it at once.
   */
  committed$(convId: string): Observable<never>;

  // Reads: each sees every write queued before it.
  /**
   * What recovery rebuilds runs from: every conversation, or only `convId`'s (a takeover; empty when
   * the store has none). A row that cannot be read back is left out and named in `unreadable`, never
   * fails the load; a turn's blocks may be read when first used, and then throw a `StoredRowError`.
   */
  load(convId?: string): Promise<StoreSnapshot>;
  conversation(convId: string): Promise<ConversationRecord | undefined>;
  /** Oldest first; only `owner`'s when given. */
  conversations(owner?: string): Promise<ConversationRecord[]>;
  /** Oldest first. */
  turns(convId: string): Promise<Turn[]>;
  /** Each frame as it was appended: its `text` alone (a `WireFrame`) when it was appended with one. */
  frames(convId: string, query?: FrameQuery): Promise<FramePage<E, W>>;
  /** 0 when the conversation has no frame yet. */
  lastSeq(convId: string): Promise<number>;
  /** Pending pauses, of one conversation or of all. */
  pauses(convId?: string): Promise<StoredPause[]>;
  /** Oldest first. */
  decisions(convId: string): Promise<DecisionRecord[]>;
  /** Checkpoints of unfinished runs, of one conversation or of all; one that cannot be read back is left out (`load` names it). */
  checkpoints(convId?: string): Promise<RunCheckpoint[]>;
  engineState(convId: string): Promise<JsonValue | undefined>;
  /**
   * The conversation's last seq, read at once: a store whose reads are synchronous (SQLite) offers it,
   * so a session opened again under a closed conversation's id goes on from the stored log without the
   * runtime remembering every closed conversation's seq. Absent: the runtime remembers it.
   */
  readonly lastSeqNow?: (convId: string) => number;
  /**
   * One run's checkpoint, read at once: a store whose reads are synchronous (SQLite) offers it, so a
   * hibernated run keeps no copy of it in memory (docs/protocol.md, Durability). Absent: the runtime keeps one.
   * Throws a `StoredRowError` when it cannot be read back.
   */
  readonly checkpointNow?: (convId: string, inferenceId: string) => RunCheckpoint | undefined;
  /**
   * What the store holds of the conversation in memory to write it faster (its last seq, its turns'
   * last writes) may go: its session closed here, or its run hibernated. What is stored stays. Optional.
   */
  readonly forget?: (convId: string) => void;

  /** Commits what is queued, then releases the store (its lock). Idempotent; writes after it throw `StoreClosedError`. */
  close(): Promise<void>;
}

/** Frame retention, shared by every adapter. */
export interface StoreRetentionConfig {
  /**
   * Frames kept per conversation (the newest); older ones are deleted in batches. Default: all of them
   * (a conversation's frames go only when it is deleted).
   */
  readonly maxFramesPerConversation?: number;
}
