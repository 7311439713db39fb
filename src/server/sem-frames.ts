import type { SequencedEvent, StepwiseEvent } from '../streams/events.js';

/** The body of a SEM frame: `{"sem": true, "event": SemEvent}` (SPEC §3). */
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

/**
 * What the mapping remembers between events of one run: which model message is streaming, so every
 * `llm.*` frame of one inference shares an id and a model. Kept by the frame encoder, in hub order.
 */
export interface FrameContext {
  messageOf(inferenceId: string): { id: string; model: string } | undefined;
}

/** Maps one hub event to its one SEM frame, with the hub's seq, so frame seqs stay consecutive. */
export function toSemFrame({ seq, event }: SequencedEvent, context: FrameContext): SemFrame {
  // Built fresh per frame, so adding seq in place spares a copy on the fan-out hot path.
  const body = toSemEvent(event, context) as { seq?: number };
  body.seq = seq;
  return { sem: true, event: body as SemEvent };
}

function toSemEvent(event: StepwiseEvent, context: FrameContext): Omit<SemEvent, 'seq'> {
  const run = { inference_id: event.inference_id, turn_id: event.turn_id };
  // Only llm.* frames need the streaming message; the rest skip the lookup (this runs once per frame).
  const isLlm = event.type === 'inference-started' || event.type === 'text-delta' || event.type === 'inference-finished' ||
    event.type === 'inference-failed' || event.type === 'reasoning-delta';
  const message = (isLlm ? context.messageOf(event.inference_id) : undefined) ?? { id: event.inference_id, model: '' };
  const llmMeta = isLlm ? { inference_id: event.inference_id, turn_id: event.turn_id, session_id: event.session_id, model: message.model } : run;
  switch (event.type) {
    case 'run-started':
      return { type: 'run.start', id: event.inference_id, ...run, session_id: event.session_id };
    case 'inference-started':
      return { type: 'llm.start', id: message.id, role: 'assistant', metadata: { ...llmMeta, model: event.model } };
    case 'text-delta':
      return { type: 'llm.delta', id: message.id, delta: event.delta, cumulative: event.cumulative, metadata: llmMeta };
    case 'reasoning-delta':
      return { type: 'log', id: `${message.id}:reasoning`, level: 'debug', message: 'reasoning', fields: { delta: event.delta } };
    case 'inference-finished': {
      const { model, usage, stop_reason, duration_ms } = event;
      return { type: 'llm.final', id: message.id, text: event.text, metadata: { ...llmMeta, model, usage, stop_reason, duration_ms } };
    }
    case 'inference-failed':
      return { type: 'llm.error', id: message.id, message: event.message, ...(event.code === undefined ? {} : { code: event.code }) };
    case 'tool-call-requested':
      return { type: 'tool.start', id: event.tool_call_id, name: event.name, input: event.args, ...run };
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
    case 'run-ended':
      return { type: 'run.end', id: event.inference_id, inference_id: event.inference_id, status: event.status, ...(event.error === undefined ? {} : { error: event.error }) };
    case 'log':
      return { type: 'log', id: `log:${event.inference_id}:${event.at}`, level: event.level, message: event.message, ...(event.fields === undefined ? {} : { fields: event.fields }) };
  }
}

function pauseEvent(event: Extract<StepwiseEvent, { type: 'paused' }>): Omit<SemEvent, 'seq'> {
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
  };
}
