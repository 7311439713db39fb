import type { Observable, SchedulerLike, Unsubscribable } from 'rxjs';
import type { IdSource } from '../core/ids.js';
import type { StepSetting } from '../core/store.js';
import type { AnswerValidator } from './answer-decision.js';
import type { AgentStep, PauseInfo, PausePhase, PauseToolCall, StepwiseEvent } from './events.js';
import type { EditValidator, PauseDecision, PauseResolution } from './step-commands.js';

/** What a step controller (./step-controller.ts) is made with: its settings, its ports, and what a pause point asks of it. */

export type TimeoutAction = 'continue' | 'deny' | 'abort';

export interface StepControllerConfig {
  /** How long a pause waits before its timeout action. Default 30 000 ms. */
  readonly pauseTimeoutMs?: number;
  /** What the deadline does: `continue` (default), `deny` every call, or `abort` the run. */
  readonly timeoutAction?: TimeoutAction;
  /** How many resolved pause ids are remembered to answer "already resolved". Default 10 000. */
  readonly resolvedMemory?: number;
  /** How long a pause waits before `ports.hibernate` is told of it (docs/protocol.md, Durability). Default never. */
  readonly hibernateAfterMs?: number;
}

export interface StepControllerPorts {
  /** Virtual in marble tests; its `now()` is the clock of deadlines. Default asyncScheduler. */
  readonly scheduler?: SchedulerLike;
  /**
   * Where a resolved pause hands its run back. Default asapScheduler: after the caller of `submit`
   * or `disable` (an HTTP handler) has returned, so no loop work and no loop error ever runs on its
   * stack. Virtual in marble tests, so resuming stays exact in virtual time. A runtime on a durable
   * store passes `immediateScheduler` (./immediate-scheduler.ts): there the run waits for a commit,
   * and on a microtask it would take its next step before the command's reply went out.
   */
  readonly resumeScheduler?: SchedulerLike;
  readonly ids: IdSource;
  readonly publish: (event: StepwiseEvent) => void;
  /** Told of every resolution just before its `resumed` event is published (the audit trail). Default none. */
  readonly onResolved?: (resolution: PauseResolution) => void;
  /** Told of every change of a session's step mode (the store keeps it). Default none. */
  readonly onStepMode?: (sessionId: string, step: StepSetting) => void;
  /** Completes once what was published and resolved so far for the conversation is committed: a resolved pause hands its run back only then. Default: at once. */
  readonly committed$?: (convId: string) => Observable<never>;
  /** Told of a pause still pending `hibernateAfterMs` after it began; it may `hibernate` it at the controller given. Default none. */
  readonly hibernate?: (pause: PauseInfo, controller: Hibernator) => void;
  /** Told of what a resolution's parts threw (a store that refused its record): each is caught where it ran, and the pause still resolves. Default: ignored. */
  readonly onError?: (error: unknown) => void;
}

/** What the loop asks for at a pause point. */
export interface PauseRequest extends Partial<PauseChecks> {
  readonly conv_id: string;
  readonly session_id: string;
  readonly inference_id: string;
  readonly turn_id: string;
  readonly phase: PausePhase;
  readonly summary: string;
  readonly tool_calls: readonly PauseToolCall[];
  readonly validateEdit?: EditValidator;
  /** Checks an answer to a question of this pause (docs/protocol.md, Questions for a human). Default: its `answer_schema`. */
  readonly validateAnswer?: AnswerValidator;
  /** At `after_tools`: the results the operator may replace, by tool_call_id (the originals, for the audit trail). */
  readonly results?: Readonly<Record<string, unknown>>;
  /** Of a child run's pause: its depth and the agent calls down to it (docs/protocol.md, Agents inside agents). */
  readonly depth?: number;
  readonly path?: readonly AgentStep[];
}


/** What a command is checked against at a pause: edited arguments, answers, and the results an edit replaces. */
export interface PauseChecks {
  readonly validateEdit: EditValidator;
  /** Undefined: answers are checked against the schemas the pause carries. */
  readonly validateAnswer: AnswerValidator | undefined;
  readonly results: Readonly<Record<string, unknown>>;
}

/** A hibernated pause as its holder (the session of its run) keeps it; unsubscribed before it resolved, it resolves `cancelled`. */
export interface HeldPause extends Unsubscribable {
  readonly info: PauseInfo;
}

/** What the `hibernate` port may do at the controller that told it (docs/protocol.md, Durability). */
export interface Hibernator {
  get(pauseId: string): PauseInfo | undefined;
  /**
   * Keeps a pending pause pending (listed, decided, timed out as before) without the run waiting at it:
   * the caller unsubscribes that run next, and gets the resolution in `wake`, on the resume scheduler,
   * after `resumed` was published. Undefined when not pending or already hibernated.
   */
  hibernate(pauseId: string, wake: (resolution: PauseResolution) => void): HeldPause | undefined;
  /**
   * A pause restored from the store (a restart, a takeover) pending again with its id and deadline,
   * without a run waiting at it: as `hibernate` leaves a pause, with `paused` published (marked
   * `restored`). Undefined when it is pending already.
   */
  restoreHibernated(info: PauseInfo, checks: PauseChecks, wake: (resolution: PauseResolution) => void): HeldPause | undefined;
}

const DEFAULT_STEP_CONFIG = Object.freeze({ pauseTimeoutMs: 30_000, timeoutAction: 'continue', resolvedMemory: 10_000 });

/** The settings, checked: bad ones fail here, naming themselves. */
export function checkedConfig(config: StepControllerConfig) {
  const { pauseTimeoutMs, timeoutAction, resolvedMemory, hibernateAfterMs } = { ...DEFAULT_STEP_CONFIG, ...config };
  if (!(Number.isFinite(pauseTimeoutMs) && pauseTimeoutMs >= 0)) {
    throw new RangeError(`createStepController: pauseTimeoutMs must be a non-negative number, got ${pauseTimeoutMs}`);
  }
  if (!['continue', 'deny', 'abort'].includes(timeoutAction)) {
    throw new RangeError(`createStepController: timeoutAction must be continue, deny or abort, got "${timeoutAction}"`);
  }
  if (hibernateAfterMs !== undefined && !(Number.isFinite(hibernateAfterMs) && hibernateAfterMs >= 0)) {
    throw new RangeError(`createStepController: hibernateAfterMs must be a non-negative number, got ${hibernateAfterMs}`);
  }
  return { pauseTimeoutMs, timeoutAction: timeoutAction as TimeoutAction, resolvedMemory, hibernateAfterMs };
}

export function timeoutDecision(timeoutAction: TimeoutAction): PauseDecision {
  if (timeoutAction === 'continue') return { action: 'continue' };
  if (timeoutAction === 'deny') return { action: 'deny', reason: 'the pause deadline passed' };
  return { action: 'abort', reason: 'the pause deadline passed (timeout action: abort)' };
}

