import type { AGUIEvent, Interrupt, TokenUsage } from '@ag-ui/core';
import { loadAgUiCore as agUi } from '../server-deps.js';
import { concat, defer, mergeMap, of, type OperatorFunction } from 'rxjs';
import type { PauseInfo } from '../../core/pauses.js';
import type { StepwiseEvent } from '../../streams/events.js';

export interface AgUiEventsConfig {
  /** The AG-UI run's `runId` and `threadId` (the `conv_id`), for `RUN_FINISHED`. */
  readonly threadId: string;
  readonly runId: string;
  /** The interrupts that end the AG-UI run at a pause (see ag-ui-interrupts.ts). */
  readonly interruptsOf: (pause: PauseInfo) => Interrupt[];
}

/** What a run's segment has open while it is mapped: a text or reasoning message, the inference's message id. */
interface Open {
  message?: string;
  text?: string;
  reasoning?: string;
  readonly usage: TokenUsage[];
  ended: boolean;
}

/**
 * A run's segment (run-segment.ts) as AG-UI events (docs/ag-ui.md, Events), after the `RUN_STARTED`
 * the route sends first: text and reasoning messages, tool calls and their results, and one terminal
 * event: `RUN_FINISHED` with outcome `interrupt` at a pause, `success` (with token usage) or
 * `cancelled` at the run's end, `RUN_ERROR` for a failed run. A segment that completes without one
 * (the server stopped following the run) ends with `RUN_ERROR` `run_unavailable`, so a client is never
 * left waiting. Open messages are closed before the terminal event, as AG-UI clients require.
 *
 * ```
 * segment:  --text-delta--tool-call-requested--paused|
 * AG-UI:    --START,CONTENT--END,TOOL_CALL_START,ARGS,END--RUN_FINISHED(interrupt)|
 * ```
 */
export function toAgUiEvents(config: AgUiEventsConfig): OperatorFunction<StepwiseEvent, AGUIEvent> {
  return (segment$) =>
    defer(() => {
      const open: Open = { usage: [], ended: false };
      const mapped$ = segment$.pipe(mergeMap((event) => eventsOf(event, open, config)));
      return concat(mapped$, defer(() => (open.ended ? of() : of(...closeAll(open), unavailable()))));
    });
}

function eventsOf(event: StepwiseEvent, open: Open, config: AgUiEventsConfig): AGUIEvent[] {
  // A child run's messages and calls are its own (docs/protocol.md, Agents inside agents): the thread shows the
  // root's agent call and its result; only a child's pause reaches it, as an interrupt of the root's run.
  if (event.depth !== undefined && event.type !== 'paused') return [];
  switch (event.type) {
    case 'inference-started':
      open.message = event.message_id ?? event.inference_id;
      return [];
    case 'reasoning-started':
    case 'reasoning-delta':
      return reasoningOf(event.type === 'reasoning-delta' ? event.delta : '', event.message_id ?? event.inference_id, open);
    case 'reasoning-finished':
      return closeReasoning(open);
    case 'text-delta':
      return textOf(event.delta, event.message_id ?? event.inference_id, open);
    case 'inference-finished':
      open.usage.push({ model: event.model, inputTokens: event.usage.input_tokens, outputTokens: event.usage.output_tokens, totalTokens: event.usage.input_tokens + event.usage.output_tokens });
      return closeAll(open);
    case 'inference-failed':
      return closeAll(open);
    case 'tool-call-requested':
      return [...closeAll(open), ...toolCallOf(event.tool_call_id, event.name, event.args, open.message)];
    case 'tool-result':
      return [toolResultOf(event.tool_call_id, event.result, event.error)];
    case 'paused':
      open.ended = true;
      return [...closeAll(open), { type: agUi().EventType.RUN_FINISHED, threadId: config.threadId, runId: config.runId, outcome: { type: 'interrupt', interrupts: config.interruptsOf(event.pause) } }];
    case 'run-ended':
      open.ended = true;
      return [...closeAll(open), endOf(event.status, event.error, open, config)];
    default:
      return [];
  }
}

function textOf(delta: string, messageId: string, open: Open): AGUIEvent[] {
  const started: AGUIEvent[] = open.text === messageId ? [] : [...closeAll(open), { type: agUi().EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' }];
  open.text = messageId;
  // AG-UI refuses an empty delta.
  return delta === '' ? started : [...started, { type: agUi().EventType.TEXT_MESSAGE_CONTENT, messageId, delta }];
}

function reasoningOf(delta: string, inferenceMessage: string, open: Open): AGUIEvent[] {
  // The same id as the `llm.thinking.*` frames (docs/protocol.md, Frames).
  const messageId = `${inferenceMessage}:thinking`;
  const started: AGUIEvent[] =
    open.reasoning === messageId
      ? []
      : [...closeAll(open), { type: agUi().EventType.REASONING_START, messageId }, { type: agUi().EventType.REASONING_MESSAGE_START, messageId, role: 'reasoning' }];
  open.reasoning = messageId;
  return delta === '' ? started : [...started, { type: agUi().EventType.REASONING_MESSAGE_CONTENT, messageId, delta }];
}

function closeReasoning(open: Open): AGUIEvent[] {
  const messageId = open.reasoning;
  if (messageId === undefined) return [];
  delete open.reasoning;
  return [
    { type: agUi().EventType.REASONING_MESSAGE_END, messageId },
    { type: agUi().EventType.REASONING_END, messageId },
  ];
}

function closeAll(open: Open): AGUIEvent[] {
  const text = open.text;
  delete open.text;
  return [...closeReasoning(open), ...(text === undefined ? [] : [{ type: agUi().EventType.TEXT_MESSAGE_END, messageId: text } as const])];
}

function toolCallOf(toolCallId: string, name: string, args: unknown, parentMessageId: string | undefined): AGUIEvent[] {
  return [
    { type: agUi().EventType.TOOL_CALL_START, toolCallId, toolCallName: name, ...(parentMessageId === undefined ? {} : { parentMessageId }) },
    { type: agUi().EventType.TOOL_CALL_ARGS, toolCallId, delta: JSON.stringify(args ?? {}) },
    { type: agUi().EventType.TOOL_CALL_END, toolCallId },
  ];
}

/** AG-UI has no error field on a result: the error is its content, and its metadata says so. */
function toolResultOf(toolCallId: string, result: unknown, error: string | undefined): AGUIEvent {
  const base = { type: agUi().EventType.TOOL_CALL_RESULT, messageId: `${toolCallId}:result`, toolCallId, role: 'tool' } as const;
  return error === undefined ? { ...base, content: JSON.stringify(result ?? null) } : { ...base, content: error, metadata: { stepwise: { error: true } } };
}

function endOf(status: string, error: string | undefined, open: Open, config: AgUiEventsConfig): AGUIEvent {
  const usage = open.usage.length > 0 ? { usage: agUi().aggregateTokenUsage(open.usage) } : {};
  if (status === 'failed') return { type: agUi().EventType.RUN_ERROR, message: error ?? 'the run failed', code: 'run_failed', ...usage };
  const outcome = status === 'cancelled' ? ({ type: 'cancelled' } as const) : ({ type: 'success' } as const);
  // `max_iterations` is a completed run whose model was stopped: success, and the reason in metadata.
  const metadata = status === 'max_iterations' ? { metadata: { stepwise: { status } } } : {};
  return { type: agUi().EventType.RUN_FINISHED, threadId: config.threadId, runId: config.runId, outcome, ...usage, ...metadata };
}

/** The segment ended without a terminal event: the server stopped following the run (shutdown, the run taken over by another instance). */
const unavailable = (): AGUIEvent => ({
  type: agUi().EventType.RUN_ERROR,
  code: 'run_unavailable',
  message: 'the server stopped following this run; its state is on GET /conversations/:conv_id',
});
