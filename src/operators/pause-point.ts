import { concatMap, map, of, type Observable, type OperatorFunction } from 'rxjs';
import { pendingToolCalls, type ToolCall } from '../core/turns.js';
import type { PausePhase } from '../streams/events.js';
import type { PauseResolution } from '../streams/step-commands.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import { endWith, hasEnded, registryOf, withDecision, type LoopPorts, type LoopState } from './loop-state.js';

/**
 * A breakpoint: when step mode is on for the session, pauses the run at `phase` until the operator
 * continues (or denies or edits), the deadline passes, or step mode is switched off.
 *
 * ```
 * state:   --s------------------|
 * command:   --------c               (continue at 8 frames)
 * events:    P-------R               (paused, then resumed: continued)
 * output:  ----------s'---------|    (s' carries the decision for tool execution)
 * ```
 *
 * Step mode off, or `after_inference` with no pending tool calls: the state passes through at once.
 * A `deny` or `edit` decision rides on the state to `executeTools`; the `abort` timeout action ends
 * the run. Unsubscribing while paused (how a run is cancelled) resolves the pause as `cancelled`;
 * the state then goes nowhere.
 *
 * @example
 * of(state).pipe(pausePoint('after_inference', ports))
 */
export function pausePoint(
  phase: PausePhase,
  ports: Pick<LoopPorts, 'controller' | 'registry'>,
): OperatorFunction<LoopState, LoopState> {
  // concatMap: a run has at most one pause open, and states keep their order.
  return concatMap((state: LoopState) => pauseAt(phase, ports, state));
}

/**
 * One state at a pause point: the state at once when there is nothing to pause for, else the
 * controller's pause with its resolution applied. The tool loop calls it directly for its pause
 * phases, so a waiting run holds no concatMap layer (each live layer costs about 1 KB of heap per
 * paused run, `paused_heap_per_run`).
 */
export function pauseAt(
  phase: PausePhase,
  ports: Pick<LoopPorts, 'controller' | 'registry'>,
  state: LoopState,
  /** The state's pending calls, when the caller knows them already. */
  pending?: readonly ToolCall[],
): Observable<LoopState> {
  if (hasEnded(state) || !ports.controller.isEnabled(state.run.session_id)) return of(state);
  const calls = phase === 'after_inference' ? (pending ?? pendingToolCalls(state.blocks)) : [];
  if (phase === 'after_inference' && calls.length === 0) return of(state);
  const { run } = state;
  return ports.controller
    .pause({
      conv_id: run.conv_id,
      session_id: run.session_id,
      inference_id: run.inference_id,
      turn_id: run.turn_id,
      phase,
      summary: summarize(phase, state, calls),
      tool_calls: calls.map((call) => ({ id: call.id, name: call.name, input: call.args })),
      validateEdit: editValidator(calls, registryOf(ports, run)),
    })
    .pipe(map((resolution) => applyResolution(phase, state, resolution)));
}

function applyResolution(phase: PausePhase, state: LoopState, resolution: PauseResolution): LoopState {
  if (resolution.decision.action === 'abort') return endWith(state, { status: 'failed', error: resolution.decision.reason });
  return phase === 'after_inference' ? withDecision(state, resolution.decision) : state;
}

function summarize(phase: PausePhase, state: LoopState, calls: readonly ToolCall[]): string {
  if (phase === 'after_inference') {
    const names = calls.map((call) => call.name).join(', ');
    return `the model asked for ${calls.length} tool call${calls.length === 1 ? '' : 's'}: ${names}`;
  }
  const results = state.blocks.filter((block) => block.kind === 'tool_use').length;
  return `tools ran (${results} result${results === 1 ? '' : 's'} in this turn); next: inference ${state.iteration + 1}`;
}

/** Edited arguments are checked against the schema of the tool each call names. */
function editValidator(calls: readonly ToolCall[], registry: ToolRegistry) {
  return (toolCallId: string, args: unknown): readonly string[] => {
    const call = calls.find((candidate) => candidate.id === toolCallId);
    const tool = call && registry.get(call.name);
    if (!tool) return [`no known tool for tool_call_id "${toolCallId}"`];
    const validation = tool.validate(args);
    return validation.ok ? [] : validation.issues;
  };
}
