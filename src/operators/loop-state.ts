import type { SchedulerLike } from 'rxjs';
import type { IdSource } from '../core/ids.js';
import type { GrantPort } from '../core/grants.js';
import type { Block } from '../core/turns.js';
import type { Engine } from '../core/engine.js';
import type { EventOrigin, RunStatus, StepwiseEvent } from '../streams/events.js';
import type { PauseDecision } from '../streams/step-commands.js';
import type { StepController } from '../streams/step-controller.js';
import type { ToolExecutor } from '../tools/tool-executor.js';
import type { ToolRegistry } from '../tools/tool-registry.js';

/** What stays fixed during one run. */
export interface RunContext extends EventOrigin {
  /** Blocks of earlier turns (and the system prompt), sent before this turn's blocks. */
  readonly history: readonly Block[];
  /** The tool allow-list of this run; undefined means every registered tool. */
  readonly allowedTools?: ReadonlySet<string>;
  /** This run's own iteration limit (the `/chat` override); else the loop's. */
  readonly maxIterations?: number;
  /** This run's engine, when its session (or the run itself) chose one; else the loop's `ports.engine`. */
  readonly engine?: Engine;
  /** This run's tools, when its session (or the run itself) chose them; else the loop's registry and executor. */
  readonly tools?: RunTools;
  /** A child run's step mode (docs/protocol.md, Agents inside agents): `off` pauses it only for breakpoints and questions. */
  readonly stepMode?: 'inherit' | 'off';
  /**
   * The tokens the run's inferences used, its children's included: one tally a run and its children share, counted
   * as each inference finishes and said by the root's `run-ended`. Absent: not counted.
   */
  readonly usage?: UsageTally;
}

/** Tokens counted so far; the one mutable part of a run's context. */
export interface UsageTally {
  input_tokens: number;
  output_tokens: number;
}

/** A tool set of its own: the registry that advertises and validates, the executor that runs. */
export interface RunTools {
  readonly registry: ToolRegistry;
  readonly executor: ToolExecutor;
}

/** How a run ended; set once, after which every operator passes the state through untouched. */
export interface RunOutcome {
  readonly status: RunStatus;
  readonly error?: string;
}

/**
 * What the loop does next with a state: infer, maybe pause, run the tools, maybe pause, again.
 * Each phase is its own short-lived pipeline, so a paused run holds only its pause.
 */
export type LoopPhase = 'inference' | 'after_inference' | 'tools' | 'after_tools';

/** The value that flows through the loop's operators, one per phase. */
export interface LoopState {
  readonly run: RunContext;
  /** The phase this state goes to next; absent means `inference`. */
  readonly next?: LoopPhase;
  /** This turn's blocks so far. */
  readonly blocks: readonly Block[];
  /** Inferences done in this run. */
  readonly iteration: number;
  /** The operator's decision at the last `after_inference` pause, consumed by tool execution. */
  readonly decision?: PauseDecision;
  readonly outcome?: RunOutcome;
}

/** The ports every loop operator may use. Only these touch the world. */
export interface LoopPorts {
  readonly engine: Engine;
  readonly registry: ToolRegistry;
  readonly executor: ToolExecutor;
  readonly controller: StepController;
  readonly publish: (event: StepwiseEvent) => void;
  readonly scheduler: SchedulerLike;
  readonly ids: IdSource;
  /** Remembered approvals (docs/protocol.md, Grants): covered calls run without a pause. Default none. */
  readonly grants?: GrantPort;
}

/** The engine this run talks to. */
export const engineOf = (ports: Pick<LoopPorts, 'engine'>, run: RunContext): Engine => run.engine ?? ports.engine;

/** The registry that advertises and validates this run's tools. */
export const registryOf = (ports: Pick<LoopPorts, 'registry'>, run: RunContext): ToolRegistry => run.tools?.registry ?? ports.registry;

/** Whether step mode applies to this run: on for its session, and not switched off for it as a child (`stepMode: "off"`). */
export const isStepping = (ports: Pick<LoopPorts, 'controller'>, run: RunContext): boolean => run.stepMode !== 'off' && ports.controller.isEnabled(run.session_id);

/** The executor that runs this run's tools. */
export const executorOf = (ports: Pick<LoopPorts, 'executor'>, run: RunContext): ToolExecutor => run.tools?.executor ?? ports.executor;

/**
 * Every state is built here, field by field in one order, never by a spread that overrides fields
 * (`{ ...state, next }`): fed states of a few shapes, such spreads fall to V8's slow path, several
 * times a step, while these literals stay on the fast one and share one hidden class.
 */
const stateOf = (
  run: RunContext,
  next: LoopPhase | undefined,
  blocks: readonly Block[],
  iteration: number,
  decision: PauseDecision | undefined,
  outcome: RunOutcome | undefined,
): LoopState => ({ run, next, blocks, iteration, decision, outcome });

/** A run's first state (or one restored from a checkpoint). */
export const createLoopState = (run: RunContext, blocks: readonly Block[], more: Partial<Omit<LoopState, 'run' | 'blocks'>> = {}): LoopState =>
  stateOf(run, more.next, blocks, more.iteration ?? 0, more.decision, more.outcome);

/** The state as it goes into its `next` phase. */
export const withNext = (state: LoopState, next: LoopPhase): LoopState =>
  stateOf(state.run, next, state.blocks, state.iteration, state.decision, state.outcome);

/** The state with other blocks (edited calls, interrupted results); the rest unchanged. */
export const withBlocks = (state: LoopState, blocks: readonly Block[]): LoopState =>
  stateOf(state.run, state.next, blocks, state.iteration, state.decision, state.outcome);

/** The operator's decision at a pause, riding on the state to tool execution. */
export const withDecision = (state: LoopState, decision: PauseDecision): LoopState =>
  stateOf(state.run, state.next, state.blocks, state.iteration, decision, state.outcome);

/** After an inference: its answer appended, one more iteration, the last decision consumed. */
export const withAnswer = (state: LoopState, blocks: readonly Block[]): LoopState =>
  stateOf(state.run, state.next, blocks, state.iteration + 1, undefined, state.outcome);

/** After the tools: their results appended, the decision they followed consumed. */
export const withResults = (state: LoopState, blocks: readonly Block[]): LoopState =>
  stateOf(state.run, state.next, blocks, state.iteration, undefined, state.outcome);

export const hasEnded = (state: LoopState): boolean => state.outcome !== undefined;

export const endWith = (state: LoopState, outcome: RunOutcome): LoopState =>
  stateOf(state.run, state.next, state.blocks, state.iteration, state.decision, outcome);
