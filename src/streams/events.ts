import type { Usage } from '../core/engine.js';
import type { AgentStep, PauseInfo } from '../core/pauses.js';

export type { AgentStep, PauseInfo, PausePhase, PauseToolCall } from '../core/pauses.js';

/**
 * Events: facts that happened in a session, named in the past tense. Every event of every session
 * flows through the one event hub; the server maps each to one SEM frame.
 */

export type RunStatus = 'completed' | 'failed' | 'cancelled' | 'max_iterations';
export type ResumeReason = 'continued' | 'denied' | 'edited' | 'answered' | 'timeout' | 'disabled' | 'cancelled';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Who and where: every event carries the run it belongs to and when it happened (injected clock). */
export interface EventOrigin {
  readonly conv_id: string;
  readonly session_id: string;
  readonly inference_id: string;
  readonly turn_id: string;
  /**
   * Of a child run (docs/protocol.md, Agents inside agents): its depth (1 under the root run), the agent calls
   * from the root down to it, and the last of them as its `parent` (a run says it once; a pause has its path only).
   */
  readonly depth?: number;
  readonly path?: readonly AgentStep[];
  readonly parent?: AgentParent;
}

/** The run and the call a child run runs for. */
export interface AgentParent {
  readonly inference_id: string;
  readonly tool_call_id: string;
}

export interface EventBase extends EventOrigin {
  readonly at: number;
}

export type StepwiseEvent = EventBase &
  (
    /** `agent`: a child run's agent tool (docs/protocol.md, Agents inside agents). */
    | { readonly type: 'run-started'; readonly agent?: string }
    /** `usage`: a root run's tokens, its child runs' included (docs/protocol.md, Agents inside agents). */
    | { readonly type: 'run-ended'; readonly status: RunStatus; readonly error?: string; readonly usage?: Usage }
    /**
     * `provider`: the engine's name (`openai`, `anthropic`, `scripted`, ...), for traces; not on the wire.
     * `message_id` (on every inference event): `<inference_id>:<n>`, n counting the run's inferences
     * from 1, the `id` of its `llm.*` frames. Carried by the event so every instance that encodes it,
     * live or replayed, names it alike; absent only from frames stored before it was carried.
     */
    | { readonly type: 'inference-started'; readonly message_id?: string; readonly model: string; readonly provider?: string }
    | { readonly type: 'text-delta'; readonly message_id?: string; readonly delta: string; readonly cumulative: string }
    /** The model began to reason (first reasoning delta of an inference): `llm.thinking.start`. */
    | { readonly type: 'reasoning-started'; readonly message_id?: string }
    | { readonly type: 'reasoning-delta'; readonly message_id?: string; readonly delta: string; readonly cumulative: string }
    /** Reasoning ended (the answer or a tool call began, or the inference finished): `llm.thinking.final`. */
    | { readonly type: 'reasoning-finished'; readonly message_id?: string; readonly text: string }
    | {
        readonly type: 'inference-finished';
        readonly message_id?: string;
        readonly text: string;
        readonly model: string;
        readonly usage: Usage;
        readonly stop_reason: string | null;
        readonly duration_ms: number;
      }
    | { readonly type: 'inference-failed'; readonly message_id?: string; readonly message: string; readonly code?: string }
    | { readonly type: 'tool-call-requested'; readonly tool_call_id: string; readonly name: string; readonly args: unknown }
    | { readonly type: 'tool-execution-started'; readonly tool_call_id: string; readonly name: string; readonly args: unknown }
    | {
        readonly type: 'tool-result';
        readonly tool_call_id: string;
        readonly name: string;
        readonly result: unknown;
        readonly error?: string;
      }
    | { readonly type: 'tool-execution-finished'; readonly tool_call_id: string; readonly name: string; readonly duration_ms?: number }
    /** `restored`: paused again after a restart or a takeover, the pause already in the store. */
    | { readonly type: 'paused'; readonly pause: PauseInfo; readonly restored?: true }
    | { readonly type: 'resumed'; readonly pause_id: string; readonly reason: ResumeReason; readonly by?: string }
    /**
     * A grant let a call run where a pause would have been (docs/protocol.md, Grants). `decision_id` names its
     * audit row and `args_digest` binds it (docs/protocol.md, Approvals bound to what runs); neither is on the wire.
     */
    | { readonly type: 'granted'; readonly grant_id: string; readonly tool_call_id: string; readonly name: string; readonly decision_id: string; readonly args_digest: string }
    | { readonly type: 'log'; readonly level: LogLevel; readonly message: string; readonly fields?: Record<string, unknown> }
  );

export type StepwiseEventType = StepwiseEvent['type'];

/** The fields of one event type, without its origin and time. */
export type EventFields<T extends StepwiseEventType> = Omit<Extract<StepwiseEvent, { type: T }>, keyof EventBase | 'type'>;

/** Builds an event of `type` for `origin` at time `at`; the one typed constructor every producer uses. */
export function createEvent<T extends StepwiseEventType>(
  type: T,
  origin: EventOrigin,
  at: number,
  fields: EventFields<T>,
): Extract<StepwiseEvent, { type: T }> {
  return eventFrom(type, origin, at, { ...fields });
}

/**
 * `createEvent` for the runtime's own producers, which pass a fresh object literal each time: the event
 * is that object, given its type, origin and time, where `createEvent` copies it. The copy (a spread)
 * costs time at every event, and every step publishes several.
 */
export function eventFrom<T extends StepwiseEventType>(
  type: T,
  origin: EventOrigin,
  at: number,
  fields: EventFields<T>,
): Extract<StepwiseEvent, { type: T }> {
  const event = fields as unknown as { -readonly [K in keyof EventBase | 'type']: unknown };
  event.type = type;
  event.conv_id = origin.conv_id;
  event.session_id = origin.session_id;
  event.inference_id = origin.inference_id;
  event.turn_id = origin.turn_id;
  // A child run's events say whose: a root run's carry neither field.
  if (origin.depth !== undefined) {
    event.parent = origin.parent ?? parentOn(origin.path);
    event.depth = origin.depth;
  }
  event.at = at;
  return event as unknown as Extract<StepwiseEvent, { type: T }>;
}

/** The run and the call a child run runs for: the last agent call of its path. */
export function parentOn(path: readonly AgentStep[] | undefined): AgentParent | undefined {
  const last = path?.[path.length - 1];
  return last && { inference_id: last.inference_id, tool_call_id: last.tool_call_id };
}

/** An event with its per-conversation sequence number, as the hub hands it out. */
export interface SequencedEvent {
  readonly seq: number;
  readonly event: StepwiseEvent;
  /** Its wire JSON once the frame codec made it (src/streams/frame-codec.ts): made once, then reused as is. */
  readonly text?: string;
}
