import { asapScheduler, asyncScheduler, type Observable, type SchedulerLike } from 'rxjs';
import type { IdSource } from '../core/ids.js';
import type { StepFilter } from '../core/store.js';
import type { PauseInfo, PausePhase, PauseToolCall, StepwiseEvent } from './events.js';
import type { AnswerValidator } from './answer-decision.js';
import { createDeadlineIndex } from './deadline-index.js';
import { createDueQueue } from './due-queue.js';
import { hibernateIn, restoreAsleepIn, type HeldPause } from './dormant-pauses.js';
import { deadlinePassed, disableIn, hibernationDue, pause$, pendingOf, submitTo, type PauseBook, type PauseChecks } from './pending-pauses.js';
import type { ContinueCommand, EditValidator, PauseResolution, SubmitResult } from './step-commands.js';

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

const DEFAULT_STEP_CONFIG = Object.freeze({ pauseTimeoutMs: 30_000, timeoutAction: 'continue', resolvedMemory: 10_000 });

export interface StepControllerPorts {
  /** Virtual in marble tests; its `now()` is the clock of deadlines. Default asyncScheduler. */
  readonly scheduler?: SchedulerLike;
  /**
   * Where a resolved pause hands its run back. Default asapScheduler: after the caller of `submit`
   * or `disable` (an HTTP handler) has returned, so no loop work and no loop error ever runs on its
   * stack. Virtual in marble tests (run mode), so resuming stays exact in virtual time. A runtime on a
   * durable store passes `immediateScheduler` (./immediate-scheduler.ts): there the run waits for a
   * commit, and on a microtask it would take its next step before the command's reply, a few promise
   * hops behind it, went out.
   */
  readonly resumeScheduler?: SchedulerLike;
  readonly ids: IdSource;
  readonly publish: (event: StepwiseEvent) => void;
  /** Told of every resolution just before its `resumed` event is published (the audit trail). Default none. */
  readonly onResolved?: (resolution: PauseResolution) => void;
  /**
   * Completes once what was published and resolved so far for the conversation is committed (the
   * store's `committed$`): a resolved pause hands its run back only then. Default: at once.
   */
  readonly committed$?: (convId: string) => Observable<never>;
  /** Told of a pause still pending `hibernateAfterMs` after it began; it may `hibernate` it. Default none. */
  readonly hibernate?: (pause: PauseInfo) => void;
  /**
   * Told of what a resolution's parts threw (a store that refused its record, a hibernation that
   * failed): each is caught where it ran, in a timer or a command, and the pause still resolves. Default: ignored.
   */
  readonly onError?: (error: unknown) => void;
}

/** What the loop asks for at a pause point. */
export interface PauseRequest {
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
  /**
   * A pause restored after a restart (docs/protocol.md, Durability): it keeps its id and deadline. A deadline that passed
   * while the server was down resolves at once, as `timeout`.
   */
  readonly restore?: RestoredPause;
}

export interface RestoredPause {
  readonly pause_id: string;
  /** Epoch ms, on the controller scheduler's clock. */
  readonly deadline_ms: number;
}

/** The StepController: per-session step mode, pending pauses, and the one entry point for commands. */
export interface StepController {
  /**
   * Switches step mode on, with a filter (docs/protocol.md, Breakpoints and result edits) or for every tool and both
   * phases; replaces an earlier filter.
   */
  enable(sessionId: string, filter?: StepFilter): void;
  /**
   * Switches step mode off and releases the pending pauses step mode caused; returns how many. A pause
   * that a tool's own breakpoint asked for (a call marked `breakpoint: true`) stays: it is the tool's rule.
   */
  disable(sessionId: string): number;
  isEnabled(sessionId: string): boolean;
  /** The session's step filter; undefined when step mode is off or has no filter. */
  filterOf(sessionId: string): StepFilter | undefined;
  /**
   * Whether the run's next pause at `phase` is one restored after a restart: it pauses again whatever
   * the filter says now, since an operator may have seen it. Optional (a controller that restores nothing).
   */
  restores?(inferenceId: string, phase: PausePhase): boolean;
  /**
   * Cold: on subscribe, registers a pause, publishes `paused`, and waits for the first of a command
   * for it (continue, deny, edit, or disable) and its deadline; publishes `resumed` and emits the
   * resolution once (on the resume scheduler), then completes. Unsubscribing first (how a run is
   * cancelled) publishes `resumed` as `cancelled` and emits nothing.
   */
  pause(request: PauseRequest): Observable<PauseResolution>;
  /** The one entry point for continue commands, local or from another process. */
  submit(command: ContinueCommand): SubmitResult;
  get(pauseId: string): PauseInfo | undefined;
  /** The conversation a pause belongs to, while pending and after it resolved (as long as it is remembered). */
  convOf(pauseId: string): string | undefined;
  pending(sessionId?: string): PauseInfo[];
  /**
   * Keeps a pending pause pending (listed, decided, timed out as before) without the run waiting at it:
   * the caller unsubscribes that run next, and gets the resolution in `wake`, on the resume scheduler,
   * after `resumed` was published. Unsubscribing the returned pause first resolves it as
   * `cancelled` (publishing `resumed`, no wake). Undefined when not pending or already hibernated.
   */
  hibernate?(pauseId: string, wake: (resolution: PauseResolution) => void): HeldPause | undefined;
  /**
   * A pause restored from the store (a restart, a takeover) pending again with its id and deadline,
   * without a run waiting at it: as `hibernate` leaves a pause, with `paused` published (marked
   * `restored`). `checks` are what `pause` would have been given to check commands with. Undefined
   * when it cannot (the pause is pending already).
   */
  restoreAsleep?(pause: PauseInfo, checks: PauseChecks, wake: (resolution: PauseResolution) => void): HeldPause | undefined;
}

export function createStepController(ports: StepControllerPorts, config: StepControllerConfig = {}): StepController {
  const book = createPauseBook(ports, config);
  const { enabled, pendingById, resolved } = book;
  return {
    enable: (sessionId, filter) => {
      enabled.set(sessionId, filter);
    },
    disable: (sessionId) => disableIn(book, sessionId),
    isEnabled: (sessionId) => enabled.has(sessionId),
    filterOf: (sessionId) => enabled.get(sessionId),
    pause: (request) => pause$(book, request),
    submit: (command) => submitTo(book, command),
    hibernate: (pauseId, wake) => hibernateIn(book, pauseId, wake),
    restoreAsleep: (pause, checks, wake) => restoreAsleepIn(book, pause, checks, wake),
    get: (pauseId) => pendingById.get(pauseId)?.info,
    convOf: (pauseId) => pendingById.get(pauseId)?.info.conv_id ?? resolved.get(pauseId)?.conv_id,
    pending: (sessionId) =>
      sessionId === undefined
        ? Array.from(pendingById.values(), (entry) => entry.info)
        : pendingOf(book, sessionId).map((entry) => entry.info),
  };
}

/** The controller's settings, checked, and its empty books; bad settings fail here, naming themselves. */
function createPauseBook(ports: StepControllerPorts, config: StepControllerConfig): PauseBook {
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
  const scheduler = ports.scheduler ?? asyncScheduler;
  const book: PauseBook = {
    ports,
    scheduler,
    resumeScheduler: ports.resumeScheduler ?? asapScheduler,
    pauseTimeoutMs,
    timeoutAction: timeoutAction as TimeoutAction,
    resolvedMemory,
    hibernateAfterMs,
    deadlines: createDueQueue(scheduler, {
      fire: (pauseId) => deadlinePassed(book, pauseId),
      isLive: (pauseId, at) => book.pendingById.get(pauseId)?.info.deadline_ms === at,
      liveCount: () => book.pendingById.size,
    }),
    hibernations: createDeadlineIndex(scheduler, (pauseId) => hibernationDue(book, pauseId)),
    enabled: new Map(),
    pendingById: new Map(),
    resolved: new Map(),
  };
  return book;
}
