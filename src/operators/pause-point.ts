import { concatMap, map, of, type Observable, type OperatorFunction } from 'rxjs';
import { createInterner } from '../core/intern.js';
import { isToolUseBlock, pendingToolCalls, type Block, type ToolCall } from '../core/turns.js';
import type { PausePhase } from '../streams/events.js';
import type { PauseChecks } from '../streams/controller-settings.js';
import type { PauseDecision, ResultEdit } from '../streams/step-commands.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import { endWith, hasEnded, isStepping, registryOf, withBlocks, withDecision, type LoopPorts, type LoopState } from './loop-state.js';
import { grantedOr, type GrantPorts } from './grant-point.js';
import { hasBreakpointTool, lastResults, pauseCalls, stepWants } from './pause-rules.js';

/**
 * A breakpoint: pauses the run at `phase` when step mode is on for the session (and its filter picks
 * this phase and these tools) or, at `after_inference`, when a pending call's tool asks for it itself,
 * until the operator continues (or denies or edits), the deadline passes, or step mode is switched off
 * (which keeps a pause a tool asked for).
 *
 * ```
 * state:   --s------------------|
 * command:   --------c               (continue at 8 frames)
 * events:    P-------R               (paused, then resumed: continued)
 * output:  ----------s'---------|    (s' carries the decision for tool execution)
 * ```
 *
 * Step mode off, or `after_inference` with no pending tool calls: the state passes through at once. With grants
 * among the ports, an `after_inference` pause whose every call a live grant covers is not made (see `grantedOr`).
 * A `deny` or `edit` decision rides on the state to `executeTools`; an `edit` of results at
 * `after_tools` replaces them in the state's `tool_use` blocks; the `abort` timeout action ends the run. Unsubscribing while paused (how a run is cancelled) resolves the pause as `cancelled`;
 * the state then goes nowhere.
 *
 * @example
 * of(state).pipe(pausePoint('after_inference', ports))
 */
export function pausePoint(
  phase: PausePhase,
  ports: PausePorts,
): OperatorFunction<LoopState, LoopState> {
  // concatMap: a run has at most one pause open, and states keep their order.
  return concatMap((state: LoopState) => pauseAt(phase, ports, state));
}

/**
 * One state at a pause point: the state at once when there is nothing to pause for, else the
 * controller's pause with its resolution applied. The tool loop calls it directly for its pause
 * phases, so a waiting run holds no concatMap layer (each live layer costs heap for every paused run).
 */
export function pauseAt(
  phase: PausePhase,
  ports: PausePorts,
  state: LoopState,
  /** The state's pending calls, when the caller knows them already. */
  pending?: readonly ToolCall[],
): Observable<LoopState> {
  if (hasEnded(state)) return of(state);
  const { run } = state;
  const { controller } = ports;
  const stepping = isStepping(ports, run);
  const registry = registryOf(ports, run);
  const calls = phase === 'after_inference' ? (pending ?? pendingToolCalls(state.blocks)) : NO_CALLS;
  if (phase === 'after_inference' && calls.length === 0) return of(state);
  const byStep = stepping && (stepWants(controller.filterOf(run.session_id), phase, state, calls) || controller.restores?.(run.inference_id, phase) === true);
  // Only `after_inference` has tool breakpoints; without step mode the tools decide alone.
  if (!byStep && (phase !== 'after_inference' || !hasBreakpointTool(registry, calls))) return of(state);
  const toolCalls = pauseCalls(registry, run, calls);
  if (!byStep && !toolCalls.some((call) => call.breakpoint)) return of(state);
  const pause$ = (): Observable<LoopState> =>
    controller
      .pause({
        conv_id: run.conv_id,
        session_id: run.session_id,
        inference_id: run.inference_id,
        turn_id: run.turn_id,
        phase,
        summary: sharedSummary(summarize(phase, state, calls, registry)),
        tool_calls: toolCalls,
        ...(run.depth === undefined ? {} : { depth: run.depth, path: run.path ?? [] }),
        ...pauseChecks(phase, registry, state),
      })
      .pipe(map((resolution) => applyResolution(phase, state, resolution.decision)));
  // A pause restored after a restart pauses again whatever the grants say: an operator may have seen it.
  const mayGrant = phase === 'after_inference' && hasGrants(ports) && controller.restores?.(run.inference_id, phase) !== true;
  return mayGrant ? grantedOr(ports, registry, state, calls, pause$) : pause$();
}

/** The loop's ports a pause point uses; with `grants`, covered calls may run without a pause. */
export type PausePorts = Pick<LoopPorts, 'controller' | 'registry'> & Partial<GrantPorts>;

const hasGrants = (ports: PausePorts): ports is PausePorts & GrantPorts =>
  ports.grants !== undefined && ports.publish !== undefined && ports.ids !== undefined && ports.scheduler !== undefined;

const NO_CALLS: readonly ToolCall[] = Object.freeze([]);

/**
 * A pause's decision on the state it paused: the run goes on from what this returns (also a hibernated
 * run, rebuilt, and a run whose decision was committed before a restart).
 */
export function applyResolution(phase: PausePhase, state: LoopState, decision: PauseDecision): LoopState {
  if (decision.action === 'abort') return endWith(state, { status: 'failed', error: decision.reason });
  if (phase === 'after_inference') return withDecision(state, decision);
  return decision.action === 'edit' && decision.results ? withBlocks(state, replaceResults(state.blocks, decision.results)) : state;
}

/** Edited results replace what the model sees; the block keeps what the tool returned in its metadata. */
function replaceResults(blocks: readonly Block[], results: Readonly<Record<string, ResultEdit>>): Block[] {
  return blocks.map((block): Block => {
    if (!isToolUseBlock(block) || !Object.hasOwn(results, block.payload.id)) return block;
    const { id, result, error } = block.payload;
    return {
      ...block,
      payload: { id, result: results[id]?.after },
      metadata: { ...block.metadata, original_result: result, ...(error === undefined ? {} : { original_error: error }), edited: true },
    };
  });
}

/** Pauses of the same tools say the same: one string for all of them (a pause may wait for days). */
const sharedSummary = createInterner(1024);

function summarize(phase: PausePhase, state: LoopState, calls: readonly ToolCall[], registry: ToolRegistry): string {
  const questions = calls.filter((call) => registry.get(call.name)?.human !== undefined);
  if (phase === 'after_inference' && questions.length > 0) {
    return `the model asks a human (${questions.map((call) => call.name).join(', ')}): answer to go on`;
  }
  if (phase === 'after_inference') {
    const names = calls.map((call) => call.name).join(', ');
    return `the model asked for ${calls.length} tool call${calls.length === 1 ? '' : 's'}: ${names}`;
  }
  const results = state.blocks.filter((block) => block.kind === 'tool_use').length;
  return `tools ran (${results} result${results === 1 ? '' : 's'} in this turn); next: inference ${state.iteration + 1}`;
}

/**
 * What the controller checks a command at this pause against: edited arguments and answers by the
 * schemas of the tools the calls name, and at `after_tools` the results an edit replaces. Also for a
 * pause restored hibernated, from its checkpoint's blocks.
 */
export function pauseChecks(phase: PausePhase, registry: ToolRegistry, at: { readonly blocks: readonly Block[] }): PauseChecks {
  const checks = checksOf(registry);
  // Read only where needed: a restored checkpoint's blocks are parsed when first read.
  return phase === 'after_tools' ? { ...checks, results: lastResults(at.blocks) } : checks;
}

const NO_RESULTS: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * Edited arguments are checked against the schema of the tool each call of the pause names, answers
 * against the answer schema of the question each call asks. Made once per registry and shared by all
 * its pauses: a pause (a hibernated one may wait for days) holds two references, not two closures.
 */
function checksOf(registry: ToolRegistry): PauseChecks {
  let checks = CHECKS.get(registry);
  if (checks) return checks;
  checks = {
    results: NO_RESULTS,
    validateEdit: (toolCallId, args, pause) => {
      const call = pause.tool_calls.find((candidate) => candidate.id === toolCallId);
      const tool = call && registry.get(call.name);
      if (!tool) return [`no known tool for tool_call_id "${toolCallId}"`];
      const validation = tool.validate(args);
      return validation.ok ? [] : validation.issues;
    },
    validateAnswer: (toolCallId, answer, pause) => {
      const call = pause.tool_calls.find((candidate) => candidate.id === toolCallId);
      const human = call && registry.get(call.name)?.human;
      if (!human) return [`no question with tool_call_id "${toolCallId}"`];
      const validation = human.validateAnswer(answer);
      return validation.ok ? [] : validation.issues;
    },
  };
  CHECKS.set(registry, checks);
  return checks;
}

const CHECKS = new WeakMap<ToolRegistry, PauseChecks>();
