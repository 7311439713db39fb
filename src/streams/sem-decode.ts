import type { PauseInfo, PausePhase, PauseToolCall } from '../core/pauses.js';
import type { EventOrigin, ResumeReason, RunStatus, StepwiseEvent } from './events.js';
import { eventFrom } from './events.js';
import type { SemEvent } from './sem-frames.js';

/**
 * A frame as its wire text (docs/protocol.md, Frames) read back into the event it was made from
 * (./sem-frames.ts): on an instance of a service, another instance's frames arrive as their text alone,
 * and a view that speaks another protocol (AG-UI, the AI SDK's stream) maps events. What a SEM frame
 * does not carry stays empty (`at` 0, an origin id ''); the views read only what it does carry.
 * Undefined for a text that is not a frame of this vocabulary.
 */
export function eventOfWireText(convId: string, text: string): StepwiseEvent | undefined {
  const frame = JSON.parse(text) as { event?: SemEvent };
  return frame.event ? eventOfSem(convId, frame.event) : undefined;
}

type Fields = Record<string, unknown>;
const str = (value: unknown): string => (typeof value === 'string' ? value : '');

function eventOfSem(convId: string, sem: SemEvent): StepwiseEvent | undefined {
  const meta = (sem['metadata'] ?? {}) as Fields;
  const origin: EventOrigin = {
    conv_id: convId,
    session_id: str(sem['session_id'] ?? meta['session_id']),
    inference_id: str(sem['inference_id'] ?? meta['inference_id']),
    turn_id: str(sem['turn_id'] ?? meta['turn_id']),
  };
  const messageId = sem.id.endsWith(':thinking') ? sem.id.slice(0, -':thinking'.length) : sem.id;
  const make = eventFrom as (type: string, origin: EventOrigin, at: number, fields: Fields) => StepwiseEvent;
  const at = (type: string, fields: Fields = {}): StepwiseEvent => make(type, origin, 0, fields);
  switch (sem.type) {
    case 'run.start':
      return at('run-started');
    case 'run.end':
      return at('run-ended', { status: sem['status'] as RunStatus, ...(sem['error'] === undefined ? {} : { error: sem['error'] }) });
    case 'llm.start':
      return at('inference-started', { message_id: messageId, model: str(meta['model']) });
    case 'llm.delta':
      return at('text-delta', { message_id: messageId, delta: sem['delta'], cumulative: sem['cumulative'] });
    case 'llm.thinking.start':
      return at('reasoning-started', { message_id: messageId });
    case 'llm.thinking.delta':
      return at('reasoning-delta', { message_id: messageId, delta: sem['delta'], cumulative: sem['cumulative'] });
    case 'llm.thinking.final':
      return at('reasoning-finished', { message_id: messageId, text: sem['text'] });
    case 'llm.final':
      return at('inference-finished', {
        message_id: messageId,
        text: sem['text'],
        model: str(meta['model']),
        usage: meta['usage'],
        stop_reason: meta['stop_reason'] ?? null,
        duration_ms: meta['duration_ms'] ?? 0,
      });
    case 'llm.error':
      return at('inference-failed', { message_id: messageId, message: sem['message'], ...(sem['code'] === undefined ? {} : { code: sem['code'] }) });
    default:
      return toolOrStepEvent(sem, at);
  }
}

function toolOrStepEvent(sem: SemEvent, at: (type: string, fields?: Fields) => StepwiseEvent): StepwiseEvent | undefined {
  switch (sem.type) {
    case 'tool.start':
      return at('tool-call-requested', { tool_call_id: sem.id, name: sem['name'], args: sem['input'] });
    case 'tool.delta':
      return at('tool-execution-started', { tool_call_id: sem.id, name: sem['name'], args: (sem['patch'] as Fields | undefined)?.['input'] });
    case 'tool.result':
      return at('tool-result', { tool_call_id: sem.id, name: sem['name'], result: sem['result'], ...(sem['error'] === undefined ? {} : { error: sem['error'] }) });
    case 'tool.done':
      return at('tool-execution-finished', { tool_call_id: sem.id, name: sem['name'], ...(sem['duration_ms'] === undefined ? {} : { duration_ms: sem['duration_ms'] }) });
    case 'debugger.pause':
      return at('paused', { pause: pauseOf(sem) });
    case 'debugger.resume':
      return at('resumed', { pause_id: sem['pause_id'], reason: sem['reason'] as ResumeReason, ...(sem['by'] === undefined ? {} : { by: sem['by'] }) });
    case 'log':
      return at('log', { level: sem['level'], message: sem['message'], ...(sem['fields'] === undefined ? {} : { fields: sem['fields'] }) });
    default:
      return undefined;
  }
}

function pauseOf(sem: SemEvent): PauseInfo {
  const meta = (sem['metadata'] ?? {}) as Fields;
  const extra = (sem['extra'] ?? {}) as Fields;
  return {
    pause_id: str(sem['pause_id']),
    phase: sem['phase'] as PausePhase,
    summary: str(sem['summary']),
    deadline_ms: Number(sem['deadline_ms']),
    conv_id: str(meta['conversation_id']),
    session_id: str(meta['session_id']),
    inference_id: str(meta['inference_id']),
    turn_id: str(meta['turn_id']),
    tool_calls: (extra['tool_calls'] ?? []) as PauseToolCall[],
    ...(sem['kind'] === 'question' ? { kind: 'question' as const, answer_schema: sem['answer_schema'] as Record<string, unknown> } : {}),
  };
}
