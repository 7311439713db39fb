import { asyncScheduler, Observable, Subject, type SchedulerLike, type Subscription } from 'rxjs';
import type { IdSource } from '../core/ids.js';
import { createEvent, type PauseInfo, type PausePhase, type PauseToolCall, type StepwiseEvent } from './events.js';
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

const DEFAULT_STEP_CONFIG = Object.freeze({ pauseTimeoutMs: 30_000, timeoutAction: 'continue', resolvedMemory: 10_000 });

export interface StepControllerPorts {
  /** Virtual in marble tests; its `now()` is the clock of deadlines. */
  readonly scheduler?: SchedulerLike;
  readonly ids: IdSource;
  readonly publish: (event: StepwiseEvent) => void;
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
  /** The run's cancellation notifier: the pause resolves `cancelled` at once when it emits. */
  readonly cancel$?: Observable<unknown>;
}

/** The StepController: per-session step mode, pending pauses, and the one entry point for commands. */
export interface StepController {
  enable(sessionId: string): void;
  /** Switches step mode off and releases every pending pause of that session; returns how many. */
  disable(sessionId: string): number;
  isEnabled(sessionId: string): boolean;
  /**
   * Cold: on subscribe, registers a pause, publishes `paused`, and waits for the first of a continue
   * command, the deadline, cancellation or disable; emits the resolution once and completes.
   * Unsubscribing first resolves it as `cancelled`. Either way `resumed` is published exactly once.
   */
  pause(request: PauseRequest): Observable<PauseResolution>;
  /** The one entry point for continue commands, local or from another process. */
  submit(command: ContinueCommand): SubmitResult;
  get(pauseId: string): PauseInfo | undefined;
  pending(sessionId?: string): PauseInfo[];
}

interface PendingPause {
  readonly info: PauseInfo;
  readonly validateEdit: EditValidator;
  /** Settles the pause once; later calls do nothing. */
  readonly resolve: (resolution: PauseResolution) => void;
}

/** A command that passed validation, on its way to the pause it names. */
interface DecidedCommand {
  readonly entry: PendingPause;
  readonly resolution: PauseResolution;
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
  const enabled = new Set<string>();
  const pendingById = new Map<string, PendingPause>();
  const pendingBySession = new Map<string, Set<PendingPause>>();
  // Insertion-ordered, so the oldest resolved ids are forgotten first.
  const resolved = new Map<string, PauseResolution['reason']>();
  // The Subject of continue commands: every command, from HTTP, a test or another process, passes
  // `submit`'s validation and then this one stream, which routes it to its pause by id.
  const commands = new Subject<DecidedCommand>();
  commands.subscribe(({ entry, resolution }) => entry.resolve(resolution));

  const remember = (pauseId: string, reason: PauseResolution['reason']): void => {
    resolved.set(pauseId, reason);
    if (resolved.size > resolvedMemory) resolved.delete(resolved.keys().next().value as string);
  };

  const register = (entry: PendingPause): void => {
    pendingById.set(entry.info.pause_id, entry);
    let sessionPauses = pendingBySession.get(entry.info.session_id);
    if (!sessionPauses) pendingBySession.set(entry.info.session_id, (sessionPauses = new Set()));
    sessionPauses.add(entry);
  };

  const unregister = (entry: PendingPause): void => {
    pendingById.delete(entry.info.pause_id);
    const sessionPauses = pendingBySession.get(entry.info.session_id);
    sessionPauses?.delete(entry);
    if (sessionPauses?.size === 0) pendingBySession.delete(entry.info.session_id);
  };

  const timeoutDecision = (): PauseDecision =>
    timeoutAction === 'continue'
      ? { action: 'continue' }
      : timeoutAction === 'deny'
        ? { action: 'deny', reason: 'the pause deadline passed' }
        : { action: 'abort', reason: 'the pause deadline passed (timeout action: abort)' };

  const pause = (request: PauseRequest): Observable<PauseResolution> =>
    new Observable<PauseResolution>((subscriber) => {
      const now = scheduler.now();
      const info: PauseInfo = {
        pause_id: ports.ids.next('pause'),
        phase: request.phase,
        summary: request.summary,
        deadline_ms: now + pauseTimeoutMs,
        conv_id: request.conv_id,
        session_id: request.session_id,
        inference_id: request.inference_id,
        turn_id: request.turn_id,
        tool_calls: request.tool_calls,
      };
      let deadline: Subscription | undefined;
      let cancellation: Subscription | undefined;
      let settled = false;
      // The first of a command, the deadline, cancellation, disable (or unsubscription) wins; the
      // rest are torn down with it, so a resolved pause leaves no timer or subscription behind.
      const resolve = (resolution: PauseResolution): void => {
        if (settled) return;
        settled = true;
        deadline?.unsubscribe();
        cancellation?.unsubscribe();
        unregister(entry);
        remember(info.pause_id, resolution.reason);
        const by = resolution.by === undefined ? {} : { by: resolution.by };
        ports.publish(createEvent('resumed', info, scheduler.now(), { pause_id: info.pause_id, reason: resolution.reason, ...by }));
        subscriber.next(resolution);
        subscriber.complete();
      };
      const entry: PendingPause = { info, validateEdit: request.validateEdit ?? (() => []), resolve };
      const resolution = (reason: PauseResolution['reason'], decision: PauseDecision): PauseResolution => ({ pause: info, reason, decision });

      register(entry);
      deadline = scheduler.schedule(() => resolve(resolution('timeout', timeoutDecision())), pauseTimeoutMs);
      ports.publish(createEvent('paused', info, now, { pause: info }));
      // After `paused`, so a run already cancelled publishes its pause and then resumes it, in order.
      if (!settled && request.cancel$) {
        cancellation = request.cancel$.subscribe(() => resolve(resolution('cancelled', { action: 'continue' })));
        // A notifier that had already fired resolves during subscribe, before `cancellation` is set.
        if (settled) cancellation.unsubscribe();
      }
      return () => resolve(resolution('cancelled', { action: 'continue' }));
    });

  const submit = (command: ContinueCommand): SubmitResult => {
    const entry = pendingById.get(command.pause_id);
    if (!entry) {
      const reason = resolved.get(command.pause_id);
      const error =
        reason === undefined
          ? new StepCommandError('unknown_pause', `no pause with id "${command.pause_id}"`)
          : new StepCommandError('pause_resolved', `pause "${command.pause_id}" was already resolved (${reason})`, {
              reason,
            });
      return { ok: false, error };
    }
    const decision = decide(entry.info, command, entry.validateEdit);
    if (decision instanceof StepCommandError) return { ok: false, error: decision };
    const by = command.by === undefined ? {} : { by: command.by };
    commands.next({ entry, resolution: { pause: entry.info, reason: reasonOf(decision), decision, ...by } });
    return { ok: true, pause: entry.info };
  };

  return {
    enable: (sessionId) => {
      enabled.add(sessionId);
    },
    disable: (sessionId) => {
      enabled.delete(sessionId);
      const released = [...(pendingBySession.get(sessionId) ?? [])];
      for (const entry of released) entry.resolve({ pause: entry.info, reason: 'disabled', decision: { action: 'continue' } });
      return released.length;
    },
    isEnabled: (sessionId) => enabled.has(sessionId),
    pause,
    submit,
    get: (pauseId) => pendingById.get(pauseId)?.info,
    pending: (sessionId) =>
      sessionId === undefined
        ? [...pendingById.values()].map((entry) => entry.info)
        : [...(pendingBySession.get(sessionId) ?? [])].map((entry) => entry.info),
  };
}
