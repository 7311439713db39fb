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

/**
 * The text of an `llm.delta` frame, byte for byte `JSON.stringify(toSemFrame(item, context))`, written
 * by hand: it is the frame a stream sends per token, and the metadata it repeats is serialized once per
 * inference rather than once per frame. Undefined for any other frame, or a field that is not a string
 * (JSON.stringify's rules for those apply on the generic path).
 */
export function llmDeltaText({ seq, event }: SequencedEvent, context: FrameContext): string | undefined {
  if (event.type !== 'text-delta' || typeof event.delta !== 'string' || typeof event.cumulative !== 'string' || !Number.isSafeInteger(seq)) {
    return undefined;
  }
  const message = context.messageOf(event.inference_id);
  const id = message?.id ?? event.inference_id;
  if (typeof id !== 'string') return undefined;
  const metadata = metadataText(event, message?.model ?? '');
  return `{"sem":true,"event":{"type":"llm.delta","id":${JSON.stringify(id)},"delta":${JSON.stringify(event.delta)},"cumulative":${JSON.stringify(event.cumulative)},"metadata":${metadata},"seq":${seq}}}`;
}

/** The last metadata serialized: consecutive deltas of one inference share it. */
let lastMetadata = { inference_id: '', turn_id: '', session_id: '', model: '', text: '' } as Record<string, unknown> & { text: string };

function metadataText(event: StepwiseEvent, model: string): string {
  const last = lastMetadata;
  if (last.inference_id === event.inference_id && last.turn_id === event.turn_id && last.session_id === event.session_id && last.model === model) {
    return last.text;
  }
  const metadata = llmMetadata(event, model);
  lastMetadata = { ...metadata, text: JSON.stringify(metadata) };
  return lastMetadata.text;
}

function toSemEvent(event: StepwiseEvent, context: FrameContext): Omit<SemEvent, 'seq'> {
  // Only llm.* frames need the streaming message and its metadata; the rest build neither (this runs
  // once per frame, and every object here is garbage right after serialization).
  const isLlm = event.type === 'inference-started' || event.type === 'text-delta' || event.type === 'inference-finished' ||
    event.type === 'inference-failed' || event.type === 'reasoning-started' || event.type === 'reasoning-delta' || event.type === 'reasoning-finished';
  const message = isLlm ? context.messageOf(event.inference_id) : undefined;
  const messageId = message?.id ?? event.inference_id;
  const model = message?.model ?? '';
  switch (event.type) {
    case 'run-started':
      return { type: 'run.start', id: event.inference_id, inference_id: event.inference_id, turn_id: event.turn_id, session_id: event.session_id };
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
    case 'run-ended':
      return { type: 'run.end', id: event.inference_id, inference_id: event.inference_id, status: event.status, ...(event.error === undefined ? {} : { error: event.error }) };
    case 'log':
      return { type: 'log', id: `log:${event.inference_id}:${event.at}`, level: event.level, message: event.message, ...(event.fields === undefined ? {} : { fields: event.fields }) };
  }
}

/** The `metadata` of llm.start and llm.delta, fields in this order (the wire bytes depend on it). */
function llmMetadata(event: StepwiseEvent, model: string): Record<string, unknown> {
  return { inference_id: event.inference_id, turn_id: event.turn_id, session_id: event.session_id, model };
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
