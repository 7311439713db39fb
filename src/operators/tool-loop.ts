import { EMPTY, expand, identity, map, of, pipe, queueScheduler, subscribeOn, tap, type Observable, type OperatorFunction } from 'rxjs';
import { pendingToolCalls } from '../core/turns.js';
import { executeTools } from './execute-tools.js';
import { inference } from './inference.js';
import { endWith, hasEnded, type LoopPhase, type LoopPorts, type LoopState } from './loop-state.js';
import { pauseAt, pausePoint } from './pause-point.js';
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
}

/**
 * Called with a run's state and the phase it goes to next, at every boundary where the loop could be
 * re-entered (a durable store checkpoints it). Synchronous and cheap: it queues a write, never waits.
 */
export type BoundaryHook = (state: LoopState, next: LoopPhase) => void;

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
 * Feedback is structural (`expand`): each phase's state is the next phase's input. With step mode on
 * each phase is a pipeline of its own, so a run paused for minutes holds only its pause; with step
 * mode off a whole step runs as one pipeline. Engine and tool failures end the run as values (`failed`);
 * unsubscribing cancels the engine call, the tools and any open pause (resolved as `cancelled`).
 *
 * @example
 * of(initialState).pipe(toolLoop(ports, { maxIterations: 5 }), last())
 */
export function toolLoop(ports: LoopPorts, config: ToolLoopConfig = {}): OperatorFunction<LoopState, LoopState> {
  const { maxIterations } = { ...DEFAULT_TOOL_LOOP_CONFIG, ...config };
  if (!Number.isInteger(maxIterations) || maxIterations < 1) {
    throw new RangeError(`toolLoop: maxIterations must be a positive integer, got ${maxIterations}`);
  }
  const toolsConfig = config.maxParallelTools === undefined ? {} : { maxParallelTools: config.maxParallelTools };
  const hook = config.onSnapshot;
  const onBoundary = config.onBoundary;
  /** A boundary inside the whole-step pipeline; `next` may depend on step mode at that moment. */
  const boundary = (next: (state: LoopState) => LoopPhase | undefined): OperatorFunction<LoopState, LoopState> =>
    onBoundary
      ? tap((state) => {
          const phase = hasEnded(state) ? undefined : next(state);
          if (phase) onBoundary(state, phase);
        })
      : identity;

  // Composed once: every phase of every run goes through the same operator functions.
  const phases: Readonly<Record<LoopPhase, OperatorFunction<LoopState, LoopState>>> = {
    inference: pipe(
      snapshotHook('pre_inference', ports, hook),
      inference(ports),
      snapshotHook('post_inference', ports, hook),
      map((s) => (!hasEnded(s) && pendingToolCalls(s.blocks).length === 0 ? endWith(s, { status: 'completed' }) : s)),
    ),
    after_inference: pausePoint('after_inference', ports),
    tools: pipe(executeTools(ports, toolsConfig), snapshotHook('post_tools', ports, hook)),
    after_tools: pausePoint('after_tools', ports),
  };

  // Step mode off: a whole step is one pipeline, which is the fast path; its after_inference point
  // still stops if step mode is switched on meanwhile, and its after_tools point is the next phase,
  // which `phaseOf` passes over unless step mode is on by then. Step mode on: a phase at a time, so a
  // pause holds little.
  // Its inner boundaries are checkpoints too: a crash during its tools must not re-run its inference.
  const wholeStep = pipe(
    phases.inference,
    boundary((state) => (ports.controller.isEnabled(state.run.session_id) ? 'after_inference' : undefined)),
    phases.after_inference,
    boundary(() => 'tools'),
    phases.tools,
  );

  /** The phase to run for this state: pause points are passed over while step mode is off. */
  const phaseOf = (state: LoopState): LoopPhase => {
    const phase = state.next ?? 'inference';
    const isPause = phase === 'after_inference' || phase === 'after_tools';
    return isPause && !ports.controller.isEnabled(state.run.session_id) ? FOLLOWING[phase] : phase;
  };

  const run = (state: LoopState): Observable<LoopState> => {
    if (hasEnded(state)) return EMPTY;
    const phase = phaseOf(state);
    if (phase === 'inference' && state.iteration >= (state.run.maxIterations ?? maxIterations)) {
      return of(endWith(state, { status: 'max_iterations' }));
    }
    const whole = phase === 'inference' && !ports.controller.isEnabled(state.run.session_id);
    const next = whole ? 'after_tools' : FOLLOWING[phase];
    // `next` is set on the way in: every operator keeps it on the states it derives, so the output
    // needs no extra mapping layer (each live layer costs memory while a run is paused).
    const input: LoopState = { ...state, next };
    onBoundary?.(state, phase);
    // A pause phase is the pause itself, with no operator layer around it: a run may wait for
    // minutes, and each live layer costs heap for every paused run. Pauses need no trampoline
    // either (every cycle has work phases).
    if (phase === 'after_inference' || phase === 'after_tools') return pauseAt(phase, ports, input);
    // Work phases start on the queue scheduler: one that finishes synchronously (zero-latency engine
    // and tools) lets the next start only after it has returned, so a long run keeps a flat stack;
    // still synchronous, so virtual time is unchanged.
    return (whole ? wholeStep : phases[phase])(of(input)).pipe(subscribeOn(queueScheduler));
  };

  return (source) => source.pipe(expand(run));
}
