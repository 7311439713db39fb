import { Observable, type OperatorFunction } from 'rxjs';
import type { Block } from '../core/turns.js';
import { EngineError, type EngineEvent } from '../core/engine.js';
import { createEvent } from '../streams/events.js';
import { concatOrPass } from './concat-or-pass.js';
import { endWith, engineOf, hasEnded, registryOf, type LoopPorts, type LoopState } from './loop-state.js';

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
  // Serial (concat): one inference at a time, in order; the loop never has two in flight.
  return concatOrPass((state) => (hasEnded(state) ? state : inferOnce(ports, state)));
}

function inferOnce(ports: InferencePorts, state: LoopState): Observable<LoopState> {
  // One subscription to the engine, folded by hand: this runs once per step, so it avoids the
  // five operator layers a concat/tap/catchError chain would put on the hot path.
  return new Observable<LoopState>((subscriber) => {
    const { run } = state;
    const { publish, scheduler, ids } = ports;
    const engine = engineOf(ports, run);
    const startedAt = scheduler.now();
    let text = '';
    let reasoning = '';
    const calls: Block[] = [];
    let seenCallIds: Set<string> | undefined;
    let finished: Extract<EngineEvent, { type: 'finished' }> | undefined;

    let reasoningOpen = false;
    // Reasoning comes first; whatever follows it (text, a call, the end) closes it.
    const closeReasoning = (now: number): void => {
      if (!reasoningOpen) return;
      reasoningOpen = false;
      publish(createEvent('reasoning-finished', run, now, { text: reasoning }));
    };

    const onEngineEvent = (event: EngineEvent): void => {
      const now = scheduler.now();
      if (event.type !== 'reasoning-delta') closeReasoning(now);
      switch (event.type) {
        case 'text-delta':
          text += event.delta;
          publish(createEvent('text-delta', run, now, { delta: event.delta, cumulative: text }));
          break;
        case 'reasoning-delta':
          if (!reasoningOpen) {
            reasoningOpen = true;
            publish(createEvent('reasoning-started', run, now, {}));
          }
          reasoning += event.delta;
          publish(createEvent('reasoning-delta', run, now, { delta: event.delta, cumulative: reasoning }));
          break;
        case 'tool-call': {
          // A provider may omit or repeat ids; tool_use blocks are matched by id, so keep them unique.
          seenCallIds ??= new Set();
          const id = event.id && !seenCallIds.has(event.id) ? event.id : ids.next('call');
          seenCallIds.add(id);
          calls.push({ id: ids.next('block'), kind: 'tool_call', role: 'assistant', payload: { id, name: event.name, args: event.args } });
          publish(createEvent('tool-call-requested', run, now, { tool_call_id: id, name: event.name, args: event.args }));
          break;
        }
        case 'finished':
          finished = event;
          break;
      }
    };

    const answered = (): LoopState => {
      closeReasoning(scheduler.now());
      publish(
        createEvent('inference-finished', run, scheduler.now(), {
          text,
          model: finished?.model ?? engine.model,
          usage: finished?.usage ?? { input_tokens: 0, output_tokens: 0 },
          stop_reason: finished?.stop_reason ?? null,
          duration_ms: scheduler.now() - startedAt,
        }),
      );
      const answer: Block[] = [];
      if (reasoning) answer.push({ id: ids.next('block'), kind: 'reasoning', role: 'assistant', payload: { text: reasoning } });
      if (text) answer.push({ id: ids.next('block'), kind: 'llm_text', role: 'assistant', payload: { text } });
      return { ...state, blocks: [...state.blocks, ...answer, ...calls], iteration: state.iteration + 1, decision: undefined };
    };

    // Errors are values: a failed inference ends this run, never the session's streams.
    const failed = (error: unknown): LoopState => {
      const message = error instanceof Error ? error.message : String(error);
      const code = error instanceof EngineError && error.code ? { code: error.code } : {};
      publish(createEvent('inference-failed', run, scheduler.now(), { message, ...code }));
      return endWith({ ...state, iteration: state.iteration + 1 }, { status: 'failed', error: message });
    };

    const settle = (next: LoopState): void => {
      subscriber.next(next);
      subscriber.complete();
    };

    publish(createEvent('inference-started', run, startedAt, { model: engine.model }));
    const request = {
      conv_id: run.conv_id,
      session_id: run.session_id,
      inference_id: run.inference_id,
      turn_id: run.turn_id,
      blocks: run.history.length === 0 ? state.blocks : [...run.history, ...state.blocks],
      tools: registryOf(ports, run).specs(run.allowedTools),
    };
    let events$: Observable<EngineEvent>;
    try {
      events$ = engine.infer(request);
    } catch (error) {
      // An engine that throws instead of erroring its stream still only fails this run.
      settle(failed(error));
      return;
    }
    // Unsubscribing (cancellation) unsubscribes the engine, which aborts its request.
    return events$.subscribe({
      next: onEngineEvent,
      error: (error: unknown) => settle(failed(error)),
      complete: () => settle(answered()),
    });
  });
}
