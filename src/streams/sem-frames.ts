import type { SequencedEvent, StepwiseEvent } from './events.js';

/** The body of a SEM frame: `{"sem": true, "event": SemEvent}` (docs/protocol.md, Frames). */
export interface SemEvent {
  readonly type: string;
  readonly id: string;
  readonly seq?: number;
  readonly [field: string]: unknown;
}

export interface SemFrame {
  readonly sem: true;
  readonly event: SemEvent;
}

/** One model message of a run: every `llm.*` frame of one inference shares its id and model. */
export interface Message {
  /** The seq of its `inference-started`. */
  readonly seq: number;
  readonly id: string;
  readonly model: string;
}

/** What the mapping needs beyond the event: the model message streaming at that seq of the run. */
export interface FrameContext {
  messageOf(convId: string, inferenceId: string, seq: number): Message | undefined;
}

/** Maps one hub event to its one SEM frame, with the hub's seq, so frame seqs stay consecutive. */
export function toSemFrame({ seq, event }: SequencedEvent, context: FrameContext): SemFrame {
  const body = toSemEvent(event, context.messageOf(event.conv_id, event.inference_id, seq));
  // Built fresh for this frame: seq goes in place rather than into a copy (this runs once per frame).
  body.seq = seq;
  // A child run's frame says whose it is (docs/protocol.md, Agents inside agents); its ids are unique with its run's.
  if (event.depth !== undefined) {
    body.inference_id = event.inference_id;
    body.parent = event.parent;
    body.depth = event.depth;
  }
  return { sem: true, event: body };
}

/** A SEM event under construction. */
type Body = { -readonly [K in keyof SemEvent]: SemEvent[K] };

function toSemEvent(event: StepwiseEvent, message: Message | undefined): Body {
  // Carried by the event (every instance names it alike); learned from the log for frames stored before.
  const messageId = ('message_id' in event ? event.message_id : undefined) ?? message?.id ?? event.inference_id;
  const model = message?.model ?? '';
  switch (event.type) {
    case 'run-started':
      return {
        type: 'run.start',
        id: event.inference_id,
        inference_id: event.inference_id,
        turn_id: event.turn_id,
        session_id: event.session_id,
        ...(event.agent === undefined ? {} : { agent: event.agent }),
      };
    case 'inference-started':
      return { type: 'llm.start', id: messageId, role: 'assistant', metadata: llmMetadata(event, event.model) };
    case 'text-delta':
      return { type: 'llm.delta', id: messageId, delta: event.delta, cumulative: event.cumulative, metadata: llmMetadata(event, model) };
    case 'reasoning-started':
      return { type: 'llm.thinking.start', id: `${messageId}:thinking`, role: 'assistant' };
    case 'reasoning-delta':
      return { type: 'llm.thinking.delta', id: `${messageId}:thinking`, delta: event.delta, cumulative: event.cumulative };
    case 'reasoning-finished':
      return { type: 'llm.thinking.final', id: `${messageId}:thinking`, text: event.text };
    case 'inference-finished': {
      const { inference_id, turn_id, session_id, usage, stop_reason, duration_ms } = event;
      const metadata = { inference_id, turn_id, session_id, model: event.model, usage, stop_reason, duration_ms };
      return { type: 'llm.final', id: messageId, text: event.text, metadata };
    }
    case 'inference-failed':
      return { type: 'llm.error', id: messageId, message: event.message, ...(event.code === undefined ? {} : { code: event.code }) };
    case 'tool-call-requested':
      return { type: 'tool.start', id: event.tool_call_id, name: event.name, input: event.args, inference_id: event.inference_id, turn_id: event.turn_id };
    case 'tool-execution-started':
      return { type: 'tool.delta', id: event.tool_call_id, name: event.name, patch: { exec: true, input: event.args } };
    case 'tool-result':
      return { type: 'tool.result', id: event.tool_call_id, name: event.name, result: event.result, ...(event.error === undefined ? {} : { error: event.error }) };
    case 'tool-execution-finished':
      return { type: 'tool.done', id: event.tool_call_id, name: event.name, ...(event.duration_ms === undefined ? {} : { duration_ms: event.duration_ms }) };
    case 'paused':
      return pauseEvent(event);
    case 'resumed':
      return { type: 'debugger.resume', id: event.pause_id, pause_id: event.pause_id, reason: event.reason, ...(event.by === undefined ? {} : { by: event.by }) };
    case 'granted':
      return { type: 'debugger.granted', id: event.tool_call_id, grant_id: event.grant_id, tool_call_id: event.tool_call_id, name: event.name };
    case 'run-ended':
      return {
        type: 'run.end',
        id: event.inference_id,
        inference_id: event.inference_id,
        status: event.status,
        ...(event.error === undefined ? {} : { error: event.error }),
        ...(event.usage === undefined ? {} : { usage: event.usage }),
      };
    case 'log':
      return { type: 'log', id: `log:${event.inference_id}:${event.at}`, level: event.level, message: event.message, ...(event.fields === undefined ? {} : { fields: event.fields }) };
  }
}

/** The `metadata` of llm.start and llm.delta. */
function llmMetadata(event: StepwiseEvent, model: string): Record<string, unknown> {
  return { inference_id: event.inference_id, turn_id: event.turn_id, session_id: event.session_id, model };
}

function pauseEvent(event: Extract<StepwiseEvent, { type: 'paused' }>): Body {
  const { pause } = event;
  return {
    type: 'debugger.pause',
    id: pause.pause_id,
    pause_id: pause.pause_id,
    phase: pause.phase,
    summary: pause.summary,
    deadline_ms: pause.deadline_ms,
    metadata: { session_id: pause.session_id, inference_id: pause.inference_id, turn_id: pause.turn_id, conversation_id: pause.conv_id },
    extra: { pending_tools: pause.tool_calls.map((call) => call.name), tool_calls: pause.tool_calls },
    ...(pause.kind === undefined ? {} : { kind: pause.kind, answer_schema: pause.answer_schema }),
    // A child run's pause (docs/protocol.md, Agents inside agents): where it is in the tree of agents.
    ...(pause.depth === undefined ? {} : { path: pause.path }),
  };
}
