import type { Block, Turn } from './turns.js';
import type { ConversationRecord, JsonValue, StoredPauseDecision, StoredPause } from './store-records.js';

/** What a restart reads back to resume runs where they were (docs/protocol.md, Durability). */

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
  /**
   * The pause this run waited at (`next` is its phase), resolved and committed before the run went
   * past it: recovery goes on from the pause as decided instead of pausing again (docs/protocol.md,
   * Durability). The run's next checkpoint drops it.
   */
  readonly resolved?: ResolvedPause;
  /**
   * Tool calls that had started and not finished when this was written: after a crash they are run
   * again only when idempotent, else answered "interrupted" (docs/protocol.md, Durability).
   */
  readonly running_tool_call_ids?: readonly string[];
  /** Epoch ms when it was written. */
  readonly at_ms: number;
  /** The tokens the run and its child runs used so far, when any: what its `run.end` sums (docs/protocol.md, Agents inside agents). */
  readonly usage?: { readonly input_tokens: number; readonly output_tokens: number };
}

/** A resolved pause as its run's checkpoint keeps it: which pause, and the decision the loop applies. */
export interface ResolvedPause {
  readonly pause_id: string;
  readonly decision: StoredPauseDecision;
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
  /**
   * The rows that could not be read back, left out of the lists above; absent when there are none.
   * Recovery ends the run of each one's conversation `failed` (docs/protocol.md, Durability).
   */
  readonly unreadable?: readonly UnreadableRow[];
}

/**
 * A stored row that cannot be read back (it does not parse, has the wrong shape, or nests too deep),
 * named by what its key says of it. A turn's blocks are read when first used instead: a turn that
 * cannot be read throws a `StoredRowError` then.
 */
export interface UnreadableRow {
  readonly conv_id: string;
  /** The run whose checkpoint it is, for a checkpoint row. */
  readonly inference_id?: string;
  /** The pause it is, for a pause row. */
  readonly pause_id?: string;
  /** The `StoredRowError`'s message: which row, and what is wrong with it. */
  readonly error: string;
}
