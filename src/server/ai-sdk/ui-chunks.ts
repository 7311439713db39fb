import type { UIMessageChunk } from 'ai';
import { concat, defer, mergeMap, of, type OperatorFunction } from 'rxjs';
import type { PauseInfo } from '../../core/pauses.js';
import type { StepwiseEvent } from '../../streams/events.js';

/** The data part a pause at `after_tools` shows as (docs/ai-sdk.md, Pauses). */
export const PAUSE_DATA_PART = 'data-stepwise-pause';

export interface UiChunksConfig {
  /** Calls this stream's own decision denied: their results are `tool-output-denied`, as `useChat` expects. */
  readonly denied?: ReadonlySet<string>;
}

interface Open {
  text?: string;
  reasoning?: string;
  ended: boolean;
}

/**
 * A run's segment (run-segment.ts) as AI SDK UI message stream chunks (docs/ai-sdk.md, The stream):
 * `start`, a step per inference with its reasoning and text, `tool-input-available` per call and
 * `tool-output-*` per result; at an `after_inference` pause a `tool-approval-request` per pending call
 * (`approvalId` `<pause_id>:<tool_call_id>`), at `after_tools` a `data-stepwise-pause` part, then
 * `finish`; at the end `finish` (or `error` for a failed run, `abort` for a cancelled one). A segment
 * that completes without one (the server stopped following the run) ends with an `error` chunk.
 *
 * ```
 * segment:  --inference-started--text-delta--inference-finished--tool-call-requested--paused|
 * chunks:   start,start-step--text-start,text-delta--text-end,finish-step--tool-input-available--tool-approval-request,finish|
 * ```
 */
export function toUiChunks(config: UiChunksConfig = {}): OperatorFunction<StepwiseEvent, UIMessageChunk> {
  return (segment$) =>
    defer(() => {
      const open: Open = { ended: false };
      const chunks$ = segment$.pipe(mergeMap((event) => chunksOf(event, open, config)));
      const unfinished = (): UIMessageChunk[] => [...closeAll(open), { type: 'error', errorText: 'the server stopped following this run; its state is on GET /conversations/:conv_id' }];
      return concat(of<UIMessageChunk>({ type: 'start' }), chunks$, defer(() => of(...(open.ended ? [] : unfinished()))));
    });
}

function chunksOf(event: StepwiseEvent, open: Open, config: UiChunksConfig): UIMessageChunk[] {
  // A child run's messages and calls are its own (docs/protocol.md, Agents inside agents): the chat shows the
  // root's agent call and its result; only a child's pause reaches it, as approval requests.
  if (event.depth !== undefined && event.type !== 'paused') return [];
  switch (event.type) {
    case 'inference-started':
      return [{ type: 'start-step' }];
    case 'reasoning-started':
    case 'reasoning-delta': {
      const id = `${event.message_id ?? event.inference_id}:thinking`;
      const started: UIMessageChunk[] = open.reasoning === id ? [] : [...closeAll(open), { type: 'reasoning-start', id }];
      open.reasoning = id;
      return event.type === 'reasoning-delta' ? [...started, { type: 'reasoning-delta', id, delta: event.delta }] : started;
    }
    case 'reasoning-finished':
      return closeAll(open);
    case 'text-delta': {
      const id = event.message_id ?? event.inference_id;
      const started: UIMessageChunk[] = open.text === id ? [] : [...closeAll(open), { type: 'text-start', id }];
      open.text = id;
      return [...started, { type: 'text-delta', id, delta: event.delta }];
    }
    case 'inference-finished':
      return [...closeAll(open), { type: 'finish-step' }];
    case 'tool-call-requested':
      return [...closeAll(open), { type: 'tool-input-available', toolCallId: event.tool_call_id, toolName: event.name, input: event.args ?? {} }];
    case 'tool-result':
      return [resultOf(event.tool_call_id, event.result, event.error, config)];
    case 'paused':
      open.ended = true;
      return [...closeAll(open), ...pauseChunks(event.pause), { type: 'finish', finishReason: 'tool-calls' }];
    case 'run-ended':
      open.ended = true;
      return [...closeAll(open), ...endOf(event.status, event.error)];
    default:
      return [];
  }
}

function closeAll(open: Open): UIMessageChunk[] {
  const closed: UIMessageChunk[] = [];
  if (open.reasoning !== undefined) closed.push({ type: 'reasoning-end', id: open.reasoning });
  if (open.text !== undefined) closed.push({ type: 'text-end', id: open.text });
  delete open.reasoning;
  delete open.text;
  return closed;
}

function resultOf(toolCallId: string, result: unknown, error: string | undefined, config: UiChunksConfig): UIMessageChunk {
  if (config.denied?.has(toolCallId)) return { type: 'tool-output-denied', toolCallId };
  return error === undefined ? { type: 'tool-output-available', toolCallId, output: result ?? null } : { type: 'tool-output-error', toolCallId, errorText: error };
}

/**
 * `after_inference`: an approval per pending call; `after_tools`, and a pause with a question (an approval carries no
 * answer, docs/ai-sdk.md, Pauses): the pause as a data part, answered elsewhere.
 */
function pauseChunks(pause: PauseInfo): UIMessageChunk[] {
  if (pause.phase === 'after_tools' || pause.kind === 'question') return [{ type: PAUSE_DATA_PART, id: pause.pause_id, data: pause }];
  // A child run's calls (docs/protocol.md, Agents inside agents) are not in the chat yet: each comes as a tool part of
  // its own, named `<inference_id>:<tool_call_id>` (call ids of different runs may be equal), before its approval,
  // in a step of their own: the agent call waiting for its result is then not a call the chat must answer first.
  if (pause.depth !== undefined) {
    const nested = pause.tool_calls.flatMap((call): UIMessageChunk[] => {
      const toolCallId = `${pause.inference_id}:${call.id}`;
      return [
        { type: 'tool-input-available', toolCallId, toolName: call.name, input: call.input ?? {} },
        { type: 'tool-approval-request', approvalId: `${pause.pause_id}:${call.id}`, toolCallId },
      ];
    });
    return [{ type: 'start-step' }, ...nested];
  }
  return pause.tool_calls.map((call) => ({ type: 'tool-approval-request', approvalId: `${pause.pause_id}:${call.id}`, toolCallId: call.id }));
}

function endOf(status: string, error: string | undefined): UIMessageChunk[] {
  if (status === 'failed') return [{ type: 'error', errorText: error ?? 'the run failed' }];
  if (status === 'cancelled') return [{ type: 'abort', reason: 'the run was cancelled' }];
  return [{ type: 'finish', finishReason: status === 'max_iterations' ? 'length' : 'stop' }];
}
