import { asapScheduler, asyncScheduler, Observable, type SchedulerLike } from 'rxjs';
import type { IdSource } from '../core/ids.js';
import type { StepFilter } from '../core/store.js';
import { eventFrom, type PauseInfo, type PausePhase, type PauseToolCall, type StepwiseEvent } from './events.js';
import {
  decide,
  reasonOf,
  StepCommandError,
  type ContinueCommand,
  type EditValidator,
  type PauseDecision,
  type PauseResolution,
  type SubmitResult,
} from './step-commands.js';

export type TimeoutAction = 'continue' | 'deny' | 'abort';

export interface StepControllerConfig {
  /** How long a pause waits before its timeout action. Default 30 000 ms. */
  readonly pauseTimeoutMs?: number;
  /** What the deadline does: `continue` (default), `deny` every call, or `abort` the run. */
  readonly timeoutAction?: TimeoutAction;
  /** How many resolved pause ids are remembered to answer "already resolved". Default 10 000. */
  readonly resolvedMemory?: number;
}

/** `by` of what no person decided: the deadline, switching step mode off, cancellation (docs/protocol.md, Durability). */
const SYSTEM = 'system';
/** `by` of a command that names no one: a single-user server without auth. */
const LOCAL = 'local';

const DEFAULT_STEP_CONFIG = Object.freeze({ pauseTimeoutMs: 30_000, timeoutAction: 'continue', resolvedMemory: 10_000 });

export interface StepControllerPorts {
  /** Virtual in marble tests; its `now()` is the clock of deadlines. Default asyncScheduler. */
  readonly scheduler?: SchedulerLike;
  /**
   * Where a resolved pause hands its run back. Default asapScheduler: after the caller of `submit`
   * or `disable` (an HTTP handler) has returned, so no loop work and no loop error ever runs on its
   * stack. Virtual in marble tests (run mode), so resuming stays exact in virtual time.
   */
  readonly resumeScheduler?: SchedulerLike;
  readonly ids: IdSource;
  readonly publish: (event: StepwiseEvent) => void;
  /** Told of every resolution just before its `resumed` event is published (the audit trail). Default none. */
  readonly onResolved?: (resolution: PauseResolution) => void;
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
}

interface PendingPause {
  readonly info: PauseInfo;
  readonly validateEdit: EditValidator;
  readonly results: Readonly<Record<string, unknown>>;
  /** Resolves the pause if it is still pending; later calls do nothing. */
  readonly resolve: (resolution: PauseResolution) => void;
}

/** What is kept of a resolved pause, to answer "already resolved" and whose it was. */
interface ResolvedPause {
  readonly reason: PauseResolution['reason'];
  readonly conv_id: string;
}

export function createStepController(ports: StepControllerPorts, config: StepControllerConfig = {}): StepController {
  const { pauseTimeoutMs, timeoutAction, resolvedMemory } = { ...DEFAULT_STEP_CONFIG, ...config };
  if (!(Number.isFinite(pauseTimeoutMs) && pauseTimeoutMs >= 0)) {
    throw new RangeError(`createStepController: pauseTimeoutMs must be a non-negative number, got ${pauseTimeoutMs}`);
  }
  if (!['continue', 'deny', 'abort'].includes(timeoutAction)) {
    throw new RangeError(`createStepController: timeoutAction must be continue, deny or abort, got "${timeoutAction}"`);
  }
  const scheduler = ports.scheduler ?? asyncScheduler;
  const resumeScheduler = ports.resumeScheduler ?? asapScheduler;
  // Session -> its filter (undefined: every tool, both phases); present means step mode is on.
  const enabled = new Map<string, StepFilter | undefined>();
  const pendingById = new Map<string, PendingPause>();
  // Insertion-ordered, so the oldest resolved ids are forgotten first.
  const resolved = new Map<string, ResolvedPause>();

  // A scan rather than an index by session: listing and disable are rare, and an index cost a Map
  // entry and a Set per paused run (0.2 KB of `paused_heap_per_run`).
  const pendingOf = (sessionId: string): PendingPause[] => [...pendingById.values()].filter((entry) => entry.info.session_id === sessionId);

  /** Forgets a pending pause, remembers how it ended and publishes `resumed`. */
  const settle = (entry: PendingPause, resolution: PauseResolution): void => {
    const { info } = entry;
    pendingById.delete(info.pause_id);
    resolved.set(info.pause_id, { reason: resolution.reason, conv_id: info.conv_id });
    if (resolved.size > resolvedMemory) resolved.delete(resolved.keys().next().value as string);
    ports.onResolved?.(resolution);
    ports.publish(eventFrom('resumed', info, scheduler.now(), { pause_id: info.pause_id, reason: resolution.reason, by: resolution.by ?? SYSTEM }));
  };

  const timeoutDecision = (): PauseDecision =>
    timeoutAction === 'continue'
      ? { action: 'continue' }
      : timeoutAction === 'deny'
        ? { action: 'deny', reason: 'the pause deadline passed' }
        : { action: 'abort', reason: 'the pause deadline passed (timeout action: abort)' };

  // Hand-written rather than `race(commands$.pipe(filter(mine)), timer(deadline)).pipe(take(1), tap,
  // observeOn)`: that composition held 17.3 KB per paused run against the 10 KB target of
  // `paused_heap_per_run` (each live operator layer costs 0.6-1 KB); this one Observable holds what
  // the race did. The first of a command, disable and the deadline wins; unsubscription cancels.
  const pause = (request: PauseRequest): Observable<PauseResolution> =>
    new Observable<PauseResolution>((subscriber) => {
      const now = scheduler.now();
      const { restore } = request;
      const info: PauseInfo = {
        pause_id: restore?.pause_id ?? ports.ids.next('pause'),
        phase: request.phase,
        summary: request.summary,
        deadline_ms: restore?.deadline_ms ?? now + pauseTimeoutMs,
        conv_id: request.conv_id,
        session_id: request.session_id,
        inference_id: request.inference_id,
        turn_id: request.turn_id,
        tool_calls: request.tool_calls,
      };
      const resolve = (resolution: PauseResolution): void => {
        // Still pending is what makes it the first: the registry is the one record of that.
        if (pendingById.get(info.pause_id) !== entry) return;
        deadline.unsubscribe();
        settle(entry, resolution);
        // The run goes on after whoever resolved the pause (an HTTP handler) has returned.
        subscriber.add(
          resumeScheduler.schedule(() => {
            subscriber.next(resolution);
            subscriber.complete();
          }),
        );
      };
      const entry: PendingPause = { info, validateEdit: request.validateEdit ?? (() => []), results: request.results ?? NO_RESULTS, resolve };
      pendingById.set(info.pause_id, entry);
      const deadline = scheduler.schedule(
        () => resolve({ pause: info, reason: 'timeout', decision: timeoutDecision(), by: SYSTEM }),
        Math.max(0, info.deadline_ms - now),
      );
      ports.publish(eventFrom('paused', info, now, { pause: info }));
      // Unsubscribed before it resolved: the run was cancelled.
      return () => resolve({ pause: info, reason: 'cancelled', decision: { action: 'continue' }, by: SYSTEM });
    });

  const submit = (command: ContinueCommand): SubmitResult => {
    const entry = pendingById.get(command.pause_id);
    if (!entry) {
      const reason = resolved.get(command.pause_id)?.reason;
      const error =
        reason === undefined
          ? new StepCommandError('unknown_pause', `no pause with id "${command.pause_id}"`)
          : new StepCommandError('pause_resolved', `pause "${command.pause_id}" was already resolved (${reason})`, {
              reason,
            });
      return { ok: false, error };
    }
    const decision = decide(entry.info, command, entry.validateEdit, entry.results);
    if (decision instanceof StepCommandError) return { ok: false, error: decision };
    entry.resolve({ pause: entry.info, reason: reasonOf(decision), decision, by: command.by ?? LOCAL });
    return { ok: true, pause: entry.info };
  };

  return {
    enable: (sessionId, filter) => {
      enabled.set(sessionId, filter);
    },
    disable: (sessionId) => {
      enabled.delete(sessionId);
      const released = pendingOf(sessionId).filter((entry) => !isBreakpointPause(entry.info));
      for (const { info, resolve } of released) resolve({ pause: info, reason: 'disabled', decision: { action: 'continue' }, by: SYSTEM });
      return released.length;
    },
    isEnabled: (sessionId) => enabled.has(sessionId),
    filterOf: (sessionId) => enabled.get(sessionId),
    pause,
    submit,
    get: (pauseId) => pendingById.get(pauseId)?.info,
    convOf: (pauseId) => pendingById.get(pauseId)?.info.conv_id ?? resolved.get(pauseId)?.conv_id,
    pending: (sessionId) =>
      sessionId === undefined
        ? [...pendingById.values()].map((entry) => entry.info)
        : pendingOf(sessionId).map((entry) => entry.info),
  };
}

const NO_RESULTS: Readonly<Record<string, unknown>> = Object.freeze({});

/** A pause some tool asked for itself: step mode did not cause it alone, so disabling step mode keeps it. */
const isBreakpointPause = (info: PauseInfo): boolean => info.tool_calls.some((call) => call.breakpoint === true);
