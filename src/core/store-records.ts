import type { PauseDecision, PauseInfo, PausePhase, PauseToolCall } from './pauses.js';

/** What the store keeps of a conversation besides its frames and runs: its record, pauses and decisions. */

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
