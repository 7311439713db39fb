/**
 * The pause vocabulary, defined once: the pause object of docs/protocol.md (The pause object), and a
 * decision taken at a pause. The controller publishes it, the loop consumes it, the store keeps it.
 */

export type PausePhase = 'after_inference' | 'after_tools';

/** A tool call as shown at a pause: `input` is what the model asked for. */
export interface PauseToolCall {
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
  /**
   * `true` when the call's own tool asked for this pause (docs/protocol.md, Breakpoints and result edits), with or
   * without step mode; else absent.
   */
  readonly breakpoint?: boolean;
  /**
   * Set on a question (docs/protocol.md, Questions for a human): the JSON Schema an answer to this call must meet.
   * A question always pauses and is answered with `action: "answer"`; its answer is the call's result.
   */
  readonly answer_schema?: Readonly<Record<string, unknown>>;
}

/**
 * One agent call on the way from the root run down to a child run (docs/protocol.md, Agents inside agents): the run
 * that made the call, the call and its tool's name.
 */
export interface AgentStep {
  readonly inference_id: string;
  readonly tool_call_id: string;
  readonly name: string;
}

/** A pending pause, exactly the pause object of docs/protocol.md, The pause object. */
export interface PauseInfo {
  readonly pause_id: string;
  readonly phase: PausePhase;
  readonly summary: string;
  /** Epoch ms. */
  readonly deadline_ms: number;
  readonly conv_id: string;
  readonly session_id: string;
  readonly inference_id: string;
  readonly turn_id: string;
  readonly tool_calls: readonly PauseToolCall[];
  /** `question` when a pending call asks a human something (docs/protocol.md, Questions for a human); else absent. */
  readonly kind?: 'question';
  /** With `kind: "question"`: the first question's `answer_schema` (each question call carries its own). */
  readonly answer_schema?: Readonly<Record<string, unknown>>;
  /** Of a child run's pause: how deep its run is (1 under the root run) and the agent calls down to it; absent at the root. */
  readonly depth?: number;
  readonly path?: readonly AgentStep[];
}

/** One replaced tool result: what the tool returned and what the model will see instead. */
export interface ResultEdit {
  readonly before: unknown;
  readonly after: unknown;
}

/**
 * What a decision at `after_inference` approved, bound to what runs (docs/protocol.md, Approvals bound to what runs):
 * per call that will run, the SHA-256 (lowercase hex) of its arguments' canonical JSON, after edits.
 */
export type ArgsDigests = Readonly<Record<string, string>>;

/** An operator's (or the system's) decision at a pause, as the loop consumes it and the store keeps it. */
export type PauseDecision =
  | { readonly action: 'continue'; readonly args_digests?: ArgsDigests }
  | { readonly action: 'deny'; readonly tool_call_ids?: readonly string[]; readonly reason: string; readonly args_digests?: ArgsDigests }
  | {
      readonly action: 'edit';
      readonly args_digests?: ArgsDigests;
      /** New arguments by tool_call_id (`after_inference`). */
      readonly edits: Readonly<Record<string, unknown>>;
      /** Replaced results by tool_call_id (`after_tools`), each with the original, for the block and the audit trail. */
      readonly results?: Readonly<Record<string, ResultEdit>>;
    }
  /**
   * Answers to the pause's questions by tool_call_id, each valid against its call's `answer_schema`; the other calls
   * run as with `continue`.
   */
  | { readonly action: 'answer'; readonly answers: Readonly<Record<string, unknown>>; readonly args_digests?: ArgsDigests }
  /** Only from the `abort` timeout action: the run ends as failed. */
  | { readonly action: 'abort'; readonly reason: string };
