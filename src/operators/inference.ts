import { concatMap, Observable, of, type OperatorFunction } from 'rxjs';
import { messageId } from '../core/message-ids.js';
import type { Block, ToolCallBlock } from '../core/turns.js';
import { EngineError, type EngineEvent, type InferenceRequest } from '../core/engine.js';
import { eventFrom } from '../streams/events.js';
import { emptyAnswer, hasCall, isUsableId, refusalOf, type Answer } from './model-answer.js';
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
 * tool loop calls once per inference phase (no concatMap around a single state). One Observable
 * around the engine's, where `defer`, `reduce`, `map` and `catchError` were four layers, and four
 * subscriptions, on every step of every run.
 */
export function inferOnce(ports: InferencePorts, state: LoopState): Observable<LoopState> {
  const { run } = state;
  // The model message this inference is, named by the run's count of inferences: the same on every
  // instance and after a restart (a resumed inference is the same message again).
  const message = messageId(run.inference_id, state.iteration + 1);
  return new Observable<LoopState>((subscriber) => {
    const end = (next: () => LoopState): void => {
      if (subscriber.closed) return;
      let result: LoopState;
      try {
        result = next();
      } catch (error) {
        // Errors are values: a failed inference ends this run, never the session's streams, also when
        // the engine throws instead of erroring its stream, or the answer cannot be made.
        result = failed(ports, state, error, message);
      }
      subscriber.next(result);
      subscriber.complete();
    };
    const fail = (error: unknown): void => end(() => failed(ports, state, error, message));
    try {
      const engine = engineOf(ports, run);
      const startedAt = ports.scheduler.now();
      ports.publish(eventFrom('inference-started', run, startedAt, { message_id: message, model: engine.model, provider: engine.name }));
      const request = requestOf(ports, state, message);
      const fold = foldAnswer(ports, state, message);
      let answer = emptyAnswer();
      // Returned as the teardown: unsubscribing (cancellation), or a failure while it streams, unsubscribes
      // the engine, which aborts its request.
      return engine.infer(request).subscribe({
        next: (event) => {
          if (subscriber.closed) return;
          try {
            answer = fold(answer, event);
          } catch (error) {
            fail(error);
          }
        },
        error: fail,
        complete: () => end(() => answered(ports, state, answer, startedAt, message)),
      });
    } catch (error) {
      fail(error);
      return undefined;
    }
  });
}

/** What the engine is sent: the run's history and the turn so far, and the tools the run may call. */
function requestOf(ports: InferencePorts, { run, blocks }: LoopState, message: string): InferenceRequest {
  return {
    conv_id: run.conv_id,
    session_id: run.session_id,
    inference_id: run.inference_id,
    message_id: message,
    turn_id: run.turn_id,
    blocks: run.history.length === 0 ? blocks : [...run.history, ...blocks],
    tools: registryOf(ports, run).specs(run.allowedTools),
  };
}

function closeReasoning(ports: InferencePorts, run: LoopState['run'], answer: Answer, message: string): void {
  if (!answer.reasoningOpen) return;
  answer.reasoningOpen = false;
  ports.publish(eventFrom('reasoning-finished', run, ports.scheduler.now(), { message_id: message, text: answer.reasoning }));
}

/** Adds one engine event to the answer and publishes what it says, with the text so far. */
function foldAnswer(ports: InferencePorts, state: LoopState, message: string) {
  const { publish, scheduler, ids } = ports;
  const { run } = state;
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
        const id = isUsableId(event.id) && !hasCall(answer, state.blocks, event.id) ? event.id : ids.next('call');
        const refused = refusalOf(answer, event.args);
        // Arguments refused are not kept: nothing past this point may walk them.
        const args = refused ? {} : event.args;
        const block: ToolCallBlock = { id: ids.next('block'), kind: 'tool_call', role: 'assistant', payload: { id, name: event.name, args } };
        answer.calls.push(refused ? { ...block, metadata: { refused } } : block);
        if (refused) (answer.refused ??= []).push({ id, name: event.name, error: refused });
        publish(eventFrom('tool-call-requested', run, scheduler.now(), { tool_call_id: id, name: event.name, args }));
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
  if (run.usage && finished) {
    run.usage.input_tokens += finished.usage.input_tokens;
    run.usage.output_tokens += finished.usage.output_tokens;
  }
  const blocks = state.blocks.slice();
  if (reasoning) blocks.push({ id: ids.next('block'), kind: 'reasoning', role: 'assistant', payload: { text: reasoning } });
  if (text) blocks.push({ id: ids.next('block'), kind: 'llm_text', role: 'assistant', payload: { text } });
  for (const call of answer.calls) blocks.push(call);
  if (answer.refused) for (const refusal of answer.refused) blocks.push(refusedUse(ports, run, refusal, now, state.iteration + 1));
  return withAnswer(state, blocks);
}

/**
 * A refused call's result, published as an executed call's is: it ends the call, and the model sees why.
 * It says which inference refused it: after one whose every call was, the loop goes on (`refusedBy`).
 */
function refusedUse(ports: InferencePorts, run: LoopState['run'], { id, name, error }: NonNullable<Answer['refused']>[number], at: number, iteration: number): Block {
  ports.publish(eventFrom('tool-result', run, at, { tool_call_id: id, name, result: null, error }));
  ports.publish(eventFrom('tool-execution-finished', run, at, { tool_call_id: id, name }));
  return { id: `${id}:use`, kind: 'tool_use', role: 'tool', payload: { id, result: null, error }, metadata: { refused_by_inference: iteration } };
}

/** Whether the turn ends with calls the inference that made `state` refused as they came (see `refusalOf`). */
export const endsWithRefusals = (state: LoopState): boolean => state.blocks[state.blocks.length - 1]?.metadata?.['refused_by_inference'] === state.iteration;

function failed(ports: InferencePorts, state: LoopState, error: unknown, messageId: string): LoopState {
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof EngineError && error.code ? { code: error.code } : {};
  ports.publish(eventFrom('inference-failed', state.run, ports.scheduler.now(), { message_id: messageId, message, ...code }));
  return endWith(withAnswer(state, state.blocks), { status: 'failed', error: message });
}
