import { catchError, concat, concatMap, defer, EMPTY, expand, of, queueScheduler, subscribeOn, type Observable, type OperatorFunction } from 'rxjs';
import { pendingToolCalls, type ToolCall } from '../core/turns.js';
import { childRunsOf, DEFAULT_MAX_AGENT_DEPTH } from './child-run.js';
import { toolsPhase } from './execute-tools.js';
import { endsWithRefusals, inferOnce } from './inference.js';
import { endWith, hasEnded, isStepping, registryOf, withNext, type LoopPhase, type LoopPorts, type LoopState } from './loop-state.js';
import { pauseAt } from './pause-point.js';
import { hasBreakpointTool } from './pause-rules.js';
import { snapshotHook, type SnapshotHook } from './snapshot-hook.js';

export interface ToolLoopConfig {
  /** Inferences per run before it ends with `max_iterations` (a run may set its own). Default 20. */
  readonly maxIterations?: number;
  /** Tool calls run at once. Default 3. */
  readonly maxParallelTools?: number;
  /** Called at pre_inference, post_inference and post_tools. Default none. */
  readonly onSnapshot?: SnapshotHook;
  /** The checkpoint port: told each state at a phase boundary, before its next phase runs. Default none. */
  readonly onBoundary?: BoundaryHook;
  /** How deep agents inside agents may go (docs/protocol.md, Agents inside agents). Default 4. */
  readonly maxAgentDepth?: number;
}

/**
 * Called with a run's state and the phase it goes to next, at every boundary where the loop could be
 * re-entered (a durable store checkpoints it). Synchronous and cheap: it queues a write, never waits.
 * `pending`: the state's pending tool calls, when the loop has found them (before `tools` and `after_inference`).
 * Before `tools` it may return a barrier: the tools start once it completes (a call that cannot run
 * twice is recorded as started first); its error ends the run as `failed`.
 */
export type BoundaryHook = (state: LoopState, next: LoopPhase, pending?: readonly ToolCall[]) => Observable<never> | void;

const DEFAULT_TOOL_LOOP_CONFIG = Object.freeze({ maxIterations: 20 });

const FOLLOWING: Readonly<Record<LoopPhase, LoopPhase>> = Object.freeze({
  inference: 'after_inference',
  after_inference: 'tools',
  tools: 'after_tools',
  after_tools: 'inference',
});

/**
 * The tool-calling loop: inference, pause, tools, pause, again, as a composition of the step operators.
 * Emits its input, then the state after every phase; the last emission has `outcome` set, then it completes.
 *
 * ```
 * input:   s|
 * phases:  --i--|  P-----|  t--|  P----|  --i|     (inference, pause after_inference, tools, pause after_tools, …)
 * output:  s----a--------b----c-------d-----e|     (e: no tool calls, completed)
 * ```
 *
 * Feedback is structural (`expand`): each phase's state is the next phase's input, and each phase is
 * a pipeline of its own, so a run paused for minutes holds only its pause. Pause points are passed
 * over while step mode is off for the session and no pending call's tool has a breakpoint. Engine and tool failures end the run as values
 * (`failed`); unsubscribing cancels the engine call, the tools and any open pause (resolved as `cancelled`).
 *
 * @example
 * of(initialState).pipe(toolLoop(ports, { maxIterations: 5 }), last())
 */
export function toolLoop(ports: LoopPorts, config: ToolLoopConfig = {}): OperatorFunction<LoopState, LoopState> {
  const { maxIterations, maxAgentDepth } = checkedLimits(config);
  // An agent call's child is a run of this very loop (./child-run.ts): a state through to its run's end.
  const childLoop = (initial: LoopState): Observable<LoopState> => of(initial).pipe(expand(run));
  const runTools = toolsPhase(ports, config.maxParallelTools === undefined ? {} : { maxParallelTools: config.maxParallelTools }, (state) =>
    childRunsOf(ports, childLoop, state.run, maxAgentDepth),
  );
  const hook = config.onSnapshot;
  const onBoundary = config.onBoundary;

  // Built once: every phase of every run goes through the same functions. Without a snapshot hook a
  // work phase is the step operator's own per-state Observable, with no operator layer around it.
  const infer = hook
    ? (state: LoopState) => of(state).pipe(snapshotHook('pre_inference', ports, hook), concatMap((s) => inferOnce(ports, s)), snapshotHook('post_inference', ports, hook))
    : (state: LoopState) => inferOnce(ports, state);
  const tools = hook
    ? (state: LoopState, calls: readonly ToolCall[]) => runTools(state, calls).pipe(snapshotHook('post_tools', ports, hook))
    : runTools;

  const run = (state: LoopState): Observable<LoopState> => {
    if (hasEnded(state)) return EMPTY;
    const { run: context } = state;
    let phase = state.next ?? 'inference';
    // Pause points are passed over while step mode is off: no pause layer at all.
    if (isPausePhase(phase) && !isStepping(ports, context)) phase = FOLLOWING[phase];
    // The calls the model asked for, found once per phase that needs them.
    const calls = phase === 'after_inference' || phase === 'tools' ? pendingToolCalls(state.blocks) : NO_CALLS;
    // A tool's own breakpoint pauses even with step mode off (one registry lookup per call otherwise).
    if (phase === 'tools' && state.next === 'after_inference' && hasBreakpointTool(registryOf(ports, context), calls)) phase = 'after_inference';
    // Right after an inference that asked for no tool, the run is complete (no pause). One whose every
    // call was refused as it came (inference.ts) goes on: the model sees why, with no pause and no tool.
    if (state.next === 'after_inference' && calls.length === 0) {
      if (!endsWithRefusals(state)) return of(endWith(state, { status: 'completed' }));
      phase = 'inference';
    }
    if (phase === 'inference' && state.iteration >= (context.maxIterations ?? maxIterations)) {
      return of(endWith(state, { status: 'max_iterations' }));
    }
    // `next` is set on the way in: every operator keeps it on the states it derives, so the output
    // needs no extra mapping layer (each live layer costs memory while a run is paused).
    const input = withNext(state, FOLLOWING[phase]);
    const barrier = onBoundary?.(state, phase, calls === NO_CALLS ? undefined : calls);
    // A pause phase is the pause itself, with no operator layer around it: a run may wait for
    // minutes, and each live layer costs heap for every paused run. Pauses need no trampoline
    // either (every cycle has work phases).
    if (isPausePhase(phase)) return pauseAt(phase, ports, input, calls);
    if (phase === 'tools') return barrier ? afterBarrier(barrier, input, () => tools(input, calls)) : tools(input, calls);
    // With a zero-latency engine and tools the phases recurse, dozens of stack frames a step, and a
    // long run would overflow the stack. Every TRAMPOLINE_EVERY-th inference starts on the queue
    // scheduler, which unwinds them, so a run's stack stays a few steps deep; still synchronous, so
    // virtual time is unchanged. Not at every inference: a trampoline there cost a measurable share of
    // every step, for recursion a few steps deep does not need.
    const inference$ = infer(input);
    return input.iteration % TRAMPOLINE_EVERY === 0 ? inference$.pipe(subscribeOn(queueScheduler)) : inference$;
  };

  return (source) => source.pipe(expand(run));
}

const NO_CALLS: readonly ToolCall[] = Object.freeze([]);

/** The loop's limits with their defaults, checked: a bad one fails where the loop is built. */
function checkedLimits(config: ToolLoopConfig): { readonly maxIterations: number; readonly maxAgentDepth: number } {
  const { maxIterations, maxAgentDepth } = { ...DEFAULT_TOOL_LOOP_CONFIG, maxAgentDepth: DEFAULT_MAX_AGENT_DEPTH, ...config };
  if (!Number.isInteger(maxIterations) || maxIterations < 1) {
    throw new RangeError(`toolLoop: maxIterations must be a positive integer, got ${maxIterations}`);
  }
  if (!Number.isInteger(maxAgentDepth) || maxAgentDepth < 0) {
    throw new RangeError(`toolLoop: maxAgentDepth must be an integer >= 0, got ${maxAgentDepth}`);
  }
  return { maxIterations, maxAgentDepth };
}

/** The tools phase once its barrier completed; a barrier that fails ends the run before any tool starts. */
function afterBarrier(barrier: Observable<never>, state: LoopState, tools: () => Observable<LoopState>): Observable<LoopState> {
  return concat(barrier, defer(tools)).pipe(
    catchError((error: unknown) => of(endWith(state, { status: 'failed', error: `the run's start of its tools was not recorded: ${(error as Error).message}` }))),
  );
}

/** Inferences per trampoline: at most this many steps recurse on the stack (see `run`). */
const TRAMPOLINE_EVERY = 8;

const isPausePhase = (phase: LoopPhase): phase is 'after_inference' | 'after_tools' => phase === 'after_inference' || phase === 'after_tools';

