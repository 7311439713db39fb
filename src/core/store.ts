import type { Observable } from 'rxjs';
import type { GrantStore } from './grants.js';
import type { PauseDecision, PauseInfo, PausePhase, PauseToolCall } from './pauses.js';
import type { Block, Turn } from './turns.js';

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

/** A JSON value, as stored (engine state, tool arguments and results). */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/** The pause vocabulary is core's own (./pauses.ts); the store names it as it always has. */
export type StoredPausePhase = PausePhase;

/**
 * Step mode of a conversation's session and its filter (docs/protocol.md, Breakpoints and result edits); no filter
 * means every tool, both phases.
 */
export interface StepSetting {
  readonly enabled: boolean;
  readonly filter?: StepFilter;
}

export interface StepFilter {
  readonly tools?: readonly string[];
  readonly phases?: readonly StoredPausePhase[];
}

/** Where a fork came from (docs/protocol.md, Forks). */
export interface ForkOrigin {
  readonly conv_id: string;
  readonly turn_id?: string;
  readonly pause_id?: string;
}

/** A conversation and its one session. */
export interface ConversationRecord {
  readonly conv_id: string;
  readonly session_id: string;
  /** The user who created it, when auth is on. */
  readonly owner?: string;
  /** Epoch ms. */
  readonly created_at: number;
  readonly step: StepSetting;
  /** The profile slug it was started with (docs/protocol.md, Profiles file). */
  readonly profile?: string;
  readonly forked_from?: ForkOrigin;
}

/** A tool call as shown at a pause. */
export type StoredPauseToolCall = PauseToolCall;

/** A pending pause, as stored: a restarted run pauses again with the same id and deadline. */
export type StoredPause = PauseInfo;

/**
 * One frame of a conversation's log: its `seq` (1, 2, … per conversation, never reused or skipped) and its event.
 * `text`, when the writer made it, is the frame's wire JSON (docs/protocol.md, WebSocket), made once by the frame
 * codec (src/streams/frame-codec.ts): the store keeps those bytes, and every reader (replay, `/hydrate`, another
 * instance's tail) gets them back as they are, never encoded again. Without it the store keeps the event's JSON.
 */
export interface StoredFrame<E extends FrameEvent = FrameEvent> {
  readonly seq: number;
  readonly event: E;
  readonly text?: string;
}

/**
 * A frame read back as the wire JSON it was appended with (`StoredFrame.text`): its event is not read
 * (a reader that needs a field of it parses the text, and only then).
 */
export interface WireFrame {
  readonly seq: number;
  readonly conv_id: string;
  readonly text: string;
  readonly event?: undefined;
}

/** What a frame's event must carry for the store; the rest of it is stored as is (JSON). */
export interface FrameEvent {
  readonly conv_id: string;
  readonly type: string;
}

/**
 * A page of the frame log: frames with seq > since_seq, oldest first, and the newest seq stored.
 * Under a retention limit the oldest frames are gone: the first frame's seq may then exceed since_seq + 1.
 */
export interface FramePage<E extends FrameEvent = FrameEvent, W = never> {
  /** `W`: `WireFrame` for a reader of frames appended with their `text` (the runtime's), else none. */
  readonly frames: readonly (StoredFrame<E> | W)[];
  /** 0 when the conversation has no frame. More to read when the last frame's seq is below it. */
  readonly last_seq: number;
}

export interface FrameQuery {
  /** Frames with a greater seq. Default 0 (from the start). */
  readonly since_seq?: number;
  /** At most this many (the oldest first). Default: all. */
  readonly limit?: number;
}

/** A decision at a pause, as a checkpoint keeps it. */
export type StoredPauseDecision = PauseDecision;

/** One row of the audit trail (docs/protocol.md, HTTP routes: `GET /conversations/:conv_id/decisions`). */
export interface DecisionRecord {
  readonly conv_id: string;
  /** The pause resolved; for a call a grant let run (`by: "grant"`), an id of its own, as no pause was made. */
  readonly pause_id: string;
  readonly phase: StoredPausePhase;
  readonly inference_id: string;
  /** The `debugger.resume` reason: continued, denied, edited, answered, timeout, disabled, cancelled. */
  readonly reason: string;
  /** The token's user, `local` without auth, `system` for timeout, disable and cancel. */
  readonly by: string;
  /** Epoch ms. */
  readonly at_ms: number;
  readonly tool_call_ids?: readonly string[];
  readonly message?: string;
  /** Arguments before and after an `after_inference` edit, per tool call. */
  readonly edits?: Readonly<Record<string, { readonly before: unknown; readonly after: unknown }>>;
  /** Results before and after an `after_tools` edit, per tool call (docs/protocol.md, Breakpoints and result edits). */
  readonly results?: Readonly<Record<string, { readonly before: unknown; readonly after: unknown }>>;
  /** The answers to a pause's questions, by tool_call_id (docs/protocol.md, Questions for a human). */
  readonly answers?: Readonly<Record<string, unknown>>;
  /** Per call that will run, the digest of its arguments (docs/protocol.md, Approvals bound to what runs); absent in rows written before. */
  readonly args_digests?: Readonly<Record<string, string>>;
  /** The grant that let the call run without a pause (docs/protocol.md, Grants); `by` is then `grant`. */
  readonly grant_id?: string;
}

/** The loop's phases, as `LoopPhase`: the one a checkpoint's run goes to next. */
export type CheckpointPhase = 'inference' | 'after_inference' | 'tools' | 'after_tools';

/**
 * A run's serialisable state at a phase boundary: enough to re-enter the loop at `next` after a
 * restart. It is `LoopState` without what cannot be stored (engine, tools, cancel$) and without the
 * history (rebuilt from the conversation's finished turns).
 */
export interface RunCheckpoint {
  readonly conv_id: string;
  readonly session_id: string;
  readonly inference_id: string;
  readonly turn_id: string;
  /** The phase the run goes to next. */
  readonly next: CheckpointPhase;
  /** Inferences done in this run. */
  readonly iteration: number;
  /** This turn's blocks so far. */
  readonly blocks: readonly Block[];
  /** The decision at the last `after_inference` pause, not yet consumed by tool execution. */
  readonly decision?: StoredPauseDecision;
  /** The run's tool allow-list; absent means every tool of its registry. */
  readonly allowed_tools?: readonly string[];
  readonly max_iterations?: number;
  /** The run's own system prompt (the `/chat` override), which the history does not carry. */
  readonly system_prompt?: string;
  readonly profile?: string;
  /** The pause the run waits at, when `next` follows a pause point that was published. */
  readonly pause_id?: string;
  /**
   * Tool calls that had started and not finished when this was written: after a crash they are run
   * again only when idempotent, else answered "interrupted" (docs/protocol.md, Durability).
   */
  readonly running_tool_call_ids?: readonly string[];
  /** Epoch ms when it was written. */
  readonly at_ms: number;
}

/** A conversation with what recovery needs to rebuild its session. */
export interface StoredConversation extends ConversationRecord {
  /** Oldest first; the last may be the running turn (its run then has a checkpoint). */
  readonly turns: readonly Turn[];
  readonly last_seq: number;
  readonly engine_state?: JsonValue;
}

/** Everything but frames and decisions: what a restart loads at once. */
export interface StoreSnapshot {
  readonly conversations: readonly StoredConversation[];
  readonly pauses: readonly StoredPause[];
  readonly checkpoints: readonly RunCheckpoint[];
}

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
  /** Records a decision in the audit trail and drops the pending pause it resolved. */
  recordDecision(decision: DecisionRecord): void;
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
  load(): Promise<StoreSnapshot>;
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
  /** Checkpoints of unfinished runs, of one conversation or of all. */
  checkpoints(convId?: string): Promise<RunCheckpoint[]>;
  engineState(convId: string): Promise<JsonValue | undefined>;
  /**
   * The conversation's last seq, read at once: a store whose reads are synchronous (SQLite) offers it,
   * so a session opened again under a closed conversation's id goes on from the stored log without the
   * runtime remembering every closed conversation's seq. Absent: the runtime remembers it.
   */
  readonly lastSeqNow?: (convId: string) => number;
  /**
   * The conversation's session closed here: what the store holds of it in memory to write it faster
   * (its last seq, its turns' last writes) may go; what is stored stays. Optional.
   */
  readonly closed?: (convId: string) => void;

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
