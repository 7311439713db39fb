import { EMPTY, expand, map, of, pipe, queueScheduler, subscribeOn, tap, type Observable, type OperatorFunction } from 'rxjs';
import { pendingToolCalls } from '../core/turns.js';
import { executeTools } from './execute-tools.js';
import { inference } from './inference.js';
import { endWith, hasEnded, type LoopPorts, type LoopState } from './loop-state.js';
import { pausePoint } from './pause-point.js';
import { snapshotHook, type SnapshotHook } from './snapshot-hook.js';

export interface ToolLoopConfig {
  /** Inferences per run before it ends with `max_iterations`. Default 20. */
  readonly maxIterations?: number;
  /** Tool calls run at once. Default 3. */
  readonly maxParallelTools?: number;
  /** Called at pre_inference, post_inference and post_tools. Default none. */
  readonly onSnapshot?: SnapshotHook;
  /** Sees the state after each inference and each tool execution (a cancelled run keeps its partial turn). Default none. */
  readonly onProgress?: (state: LoopState) => void;
}

const DEFAULT_TOOL_LOOP_CONFIG = Object.freeze({ maxIterations: 20 });

/**
 * The tool-calling loop: inference, pause, tools, pause, again, as a composition of the step operators.
 * Emits its input, then the state after every step; the last emission has `outcome` set, then it completes.
 *
 * ```
 * input:   s|
 * step 1:  --i--P-----t--P----         (inference, pause after_inference, tools, pause after_tools)
 * step 2:                   --i|       (no tool calls: completed)
 * output:  s------------s1----s2|
 * ```
 *
 * Feedback is structural (`expand`): each step's state is the next step's input. Engine and tool
 * failures end the run as values (`failed`); unsubscribing cancels the engine call, the tools and
 * any open pause (resolved as `cancelled`).
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
  const progress: OperatorFunction<LoopState, LoopState> = config.onProgress ? tap(config.onProgress) : (source) => source;

  // Composed once: every step of every run goes through the same operator functions.
  const inferenceHalf = pipe(
    snapshotHook('pre_inference', ports, hook),
    inference(ports),
    progress,
    snapshotHook('post_inference', ports, hook),
    map((s: LoopState) => (!hasEnded(s) && pendingToolCalls(s.blocks).length === 0 ? endWith(s, { status: 'completed' }) : s)),
  );
  const toolsHalf = pipe(
    pausePoint('after_inference', ports),
    executeTools(ports, toolsConfig),
    progress,
    snapshotHook('post_tools', ports, hook),
    pausePoint('after_tools', ports),
  );
  // Subscribed on the queue scheduler: a step that finishes synchronously (zero-latency engine and
  // tools) lets the next step start only after it has returned, so a long run keeps a flat stack.
  // Still synchronous, so virtual time is unchanged.
  const step = (state: LoopState): Observable<LoopState> => toolsHalf(inferenceHalf(of(state))).pipe(subscribeOn(queueScheduler));

  return (source) =>
    source.pipe(
      expand((state) => {
        if (hasEnded(state)) return EMPTY;
        return state.iteration >= maxIterations ? of(endWith(state, { status: 'max_iterations' })) : step(state);
      }),
    );
}
