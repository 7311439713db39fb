import { catchError, concatMap, defer, map, of, reduce, type Observable, type OperatorFunction } from 'rxjs';
import type { ToolCallBlock } from '../core/turns.js';
import { EngineError, type EngineEvent } from '../core/engine.js';
import { eventFrom } from '../streams/events.js';
import { endWith, engineOf, hasEnded, registryOf, withAnswer, type LoopPorts, type LoopState } from './loop-state.js';

export type InferencePorts = Pick<LoopPorts, 'engine' | 'registry' | 'publish' | 'scheduler' | 'ids'>;

/**
 * Runs one inference per state: sends the transcript and the allowed tools to the engine, publishes
 * what streams back as events, and appends the reasoning, text and tool_call blocks to the turn.
 *
 * ```
 * state:   --s-------------------|
 * engine:    --d--d--c--f|           (d text delta, c tool call, f finished)
 * events:    i-D--D--R--F            (inference-started, text-delta, tool-call-requested, inference-finished)
 * output:  -------------s'-------|   (s' = s + text and tool_call blocks, iteration + 1)
 * ```
 *
 * Completes when its source completes; states that have ended pass through untouched. An engine
 * failure is a value: an `inference-failed` event and a state ended as `failed`. Unsubscribing
 * (cancellation) unsubscribes the engine, which aborts its request.
 *
 * @example
 * of(state).pipe(inference(ports)) // emits the state with the model's answer appended
 */
export function inference(ports: InferencePorts): OperatorFunction<LoopState, LoopState> {
  // concatMap: one inference at a time, in order; the loop never has two in flight.
  return concatMap((state) => (hasEnded(state) ? of(state) : inferOnce(ports, state)));
}

/**
 * One inference for one state that has not ended: what `inference` does per state, as a function the
 * tool loop calls once per inference phase (no concatMap around a single state).
 */
export function inferOnce(ports: InferencePorts, state: LoopState): Observable<LoopState> {
  const { run } = state;
  const { publish, scheduler } = ports;
  const engine = engineOf(ports, run);
  // The model message this inference is, named by the run's count of inferences: the same on every
  // instance and after a restart (a resumed inference is the same message again).
  const message = run.inference_id + ':' + (state.iteration + 1);
  return defer(() => {
    const startedAt = scheduler.now();
    publish(eventFrom('inference-started', run, startedAt, { message_id: message, model: engine.model, provider: engine.name }));
    const request = {
      conv_id: run.conv_id,
      session_id: run.session_id,
      inference_id: run.inference_id,
      message_id: message,
      turn_id: run.turn_id,
      blocks: run.history.length === 0 ? state.blocks : [...run.history, ...state.blocks],
      tools: registryOf(ports, run).specs(run.allowedTools),
    };
    // Unsubscribing (cancellation) unsubscribes the engine, which aborts its request.
    return engine.infer(request).pipe(
      reduce(foldAnswer(ports, run, message), emptyAnswer()),
      map((answer) => answered(ports, state, answer, startedAt, message)),
    );
  }).pipe(
    // Errors are values: a failed inference ends this run, never the session's streams. Outside
    // defer, so an engine that throws instead of erroring its stream fails this run only too.
    catchError((error: unknown) => of(failed(ports, state, error, message))),
  );
}

/** The model's answer as it streams in; each inference folds into its own. */
interface Answer {
  text: string;
  reasoning: string;
  /** Reasoning comes first; whatever follows it (text, a call, the end) closes it. */
  reasoningOpen: boolean;
  readonly calls: ToolCallBlock[];
  finished?: Extract<EngineEvent, { type: 'finished' }>;
}

const emptyAnswer = (): Answer => ({ text: '', reasoning: '', reasoningOpen: false, calls: [] });

/** Whether the answer has a call with this id already: a short scan, where a Set per inference cost 0.2 KB a step (`loop_step`). */
function hasCall(answer: Answer, id: string): boolean {
  for (const call of answer.calls) if (call.payload.id === id) return true;
  return false;
}

function closeReasoning(ports: InferencePorts, run: LoopState['run'], answer: Answer, message: string): void {
  if (!answer.reasoningOpen) return;
  answer.reasoningOpen = false;
  ports.publish(eventFrom('reasoning-finished', run, ports.scheduler.now(), { message_id: message, text: answer.reasoning }));
}

/** Adds one engine event to the answer and publishes what it says, with the text so far. */
function foldAnswer(ports: InferencePorts, run: LoopState['run'], message: string) {
  const { publish, scheduler, ids } = ports;
  return (answer: Answer, event: EngineEvent): Answer => {
    if (event.type !== 'reasoning-delta') closeReasoning(ports, run, answer, message);
    switch (event.type) {
      case 'text-delta':
        answer.text += event.delta;
        publish(eventFrom('text-delta', run, scheduler.now(), { message_id: message, delta: event.delta, cumulative: answer.text }));
        break;
      case 'reasoning-delta': {
        const now = scheduler.now();
        if (!answer.reasoningOpen) {
          answer.reasoningOpen = true;
          publish(eventFrom('reasoning-started', run, now, { message_id: message }));
        }
        answer.reasoning += event.delta;
        publish(eventFrom('reasoning-delta', run, now, { message_id: message, delta: event.delta, cumulative: answer.reasoning }));
        break;
      }
      case 'tool-call': {
        // A provider may omit or repeat ids; tool_use blocks are matched by id, so keep them unique.
        const id = event.id && !hasCall(answer, event.id) ? event.id : ids.next('call');
        answer.calls.push({ id: ids.next('block'), kind: 'tool_call', role: 'assistant', payload: { id, name: event.name, args: event.args } });
        publish(eventFrom('tool-call-requested', run, scheduler.now(), { tool_call_id: id, name: event.name, args: event.args }));
        break;
      }
      case 'finished':
        answer.finished = event;
        break;
    }
    return answer;
  };
}

function answered(ports: InferencePorts, state: LoopState, answer: Answer, startedAt: number, message: string): LoopState {
  const { run } = state;
  const { publish, scheduler, ids } = ports;
  closeReasoning(ports, run, answer, message);
  const { text, reasoning, finished } = answer;
  const now = scheduler.now();
  publish(
    eventFrom('inference-finished', run, now, {
      message_id: message,
      text,
      model: finished?.model ?? engineOf(ports, run).model,
      usage: finished?.usage ?? { input_tokens: 0, output_tokens: 0 },
      stop_reason: finished?.stop_reason ?? null,
      duration_ms: now - startedAt,
    }),
  );
  const blocks = state.blocks.slice();
  if (reasoning) blocks.push({ id: ids.next('block'), kind: 'reasoning', role: 'assistant', payload: { text: reasoning } });
  if (text) blocks.push({ id: ids.next('block'), kind: 'llm_text', role: 'assistant', payload: { text } });
  for (const call of answer.calls) blocks.push(call);
  return withAnswer(state, blocks);
}

function failed(ports: InferencePorts, state: LoopState, error: unknown, messageId: string): LoopState {
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof EngineError && error.code ? { code: error.code } : {};
  ports.publish(eventFrom('inference-failed', state.run, ports.scheduler.now(), { message_id: messageId, message, ...code }));
  return endWith(withAnswer(state, state.blocks), { status: 'failed', error: message });
}
