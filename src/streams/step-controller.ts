import { asapScheduler, asyncScheduler, EMPTY, Observable } from 'rxjs';
import type { StepFilter, StepSetting } from '../core/store.js';
import { decideAnswers, schemaAnswerValidator } from './answer-decision.js';
import { checkedConfig, timeoutDecision, type HeldPause, type Hibernator, type PauseChecks, type PauseRequest, type StepControllerConfig, type StepControllerPorts } from './controller-settings.js';
import { eventFrom, type PauseInfo, type PausePhase } from './events.js';
import { PauseBook, SYSTEM } from './pause-book.js';
import { HibernatedPause, pauseInfoOf, residentPause } from './pending-pause.js';
import { decide, reasonOf, StepCommandError, tooDeep, type ContinueCommand, type PauseDecision, type PauseResolution, type SubmitResult } from './step-commands.js';

export type { HeldPause, Hibernator, PauseChecks, PauseRequest, StepControllerConfig, StepControllerPorts, TimeoutAction } from './controller-settings.js';
export { SYSTEM } from './pause-book.js';

/**
 * The step controller (docs/protocol.md, Step mode): each session's step mode, every pending pause of a
 * runtime, resident or hibernated, and the one entry point for decisions. Its public members as a
 * plain type, so a test may stand in for one.
 */
export type StepController = { readonly [K in keyof Controller]: Controller[K] };

export function createStepController(ports: StepControllerPorts, config: StepControllerConfig = {}): StepController {
  return new Controller(ports, config);
}

const PUBLIC_METHODS = [
  ...['enable', 'disable', 'restoreStep', 'isEnabled', 'filterOf', 'stepOf', 'expect', 'restores'],
  ...['pause', 'submit', 'get', 'convOf', 'pending', 'hibernate', 'restoreHibernated'],
] as const satisfies readonly (keyof Controller)[];

/** `by` of a command that names no one: a single-user server without auth. */
const LOCAL = 'local';

class Controller implements Hibernator {
  private readonly book: PauseBook;
  private readonly pauseTimeoutMs: number;
  private readonly hibernateAfterMs: number | undefined;
  // Session -> its filter (undefined: every tool, both phases); present means step mode is on.
  private readonly enabled = new Map<string, StepFilter | undefined>();
  // Recovery's pauses by run: the run's next pause at that phase takes the stored id and deadline.
  private readonly restoring = new Map<string, PauseInfo>();

  constructor(
    private readonly ports: StepControllerPorts,
    config: StepControllerConfig = {},
  ) {
    const { pauseTimeoutMs, timeoutAction, resolvedMemory, hibernateAfterMs } = checkedConfig(config);
    this.pauseTimeoutMs = pauseTimeoutMs;
    this.hibernateAfterMs = ports.hibernate ? hibernateAfterMs : undefined;
    const timed = { ...ports, scheduler: ports.scheduler ?? asyncScheduler, resumeScheduler: ports.resumeScheduler ?? asapScheduler };
    this.book = new PauseBook(timed, { resolvedMemory, atDeadline: timeoutDecision(timeoutAction), hibernationDue: (entry) => ports.hibernate?.(entry.info, this) });
    // Bound, as a controller made of closures was: callers pass its methods around (`controller.expect`) and spread it.
    for (const name of PUBLIC_METHODS) Object.defineProperty(this, name, { value: this[name].bind(this), enumerable: true });
  }

  /** Step mode on, with a filter (docs/protocol.md, Breakpoints and result edits) or for every tool and both phases. */
  enable(sessionId: string, filter?: StepFilter): void {
    this.enabled.set(sessionId, filter);
    this.ports.onStepMode?.(sessionId, this.stepOf(sessionId));
  }

  /**
   * Step mode off, and the pending pauses it caused released; returns how many. A pause a tool's own
   * breakpoint asked for (a call marked `breakpoint: true`) stays: it is the tool's rule.
   */
  disable(sessionId: string): number {
    const released = this.release(sessionId);
    this.ports.onStepMode?.(sessionId, this.stepOf(sessionId));
    return released;
  }

  /** A stored conversation's step mode back as the store has it (docs/protocol.md, Durability), not stored again. */
  restoreStep(sessionId: string, step: StepSetting): void {
    if (step.enabled) this.enabled.set(sessionId, step.filter);
    // Only when on: releasing looks through the pending pauses, and a restart opens a great many sessions.
    else if (this.enabled.has(sessionId)) this.release(sessionId);
  }

  isEnabled(sessionId: string): boolean {
    return this.enabled.has(sessionId);
  }

  /** The session's step filter; undefined when step mode is off or has no filter. */
  filterOf(sessionId: string): StepFilter | undefined {
    return this.enabled.get(sessionId);
  }

  /** A session's step mode and filter, as the store keeps them. */
  stepOf(sessionId: string): StepSetting {
    const filter = this.enabled.get(sessionId);
    return filter ? { enabled: true, filter } : { enabled: this.enabled.has(sessionId) };
  }

  /** Recovery (docs/protocol.md, Durability): the run's next pause at this phase takes the stored pause's id and deadline. */
  expect(pause: PauseInfo): void {
    this.restoring.set(pause.inference_id, pause);
  }

  /** Whether the run's next pause at `phase` is a restored one: it pauses again whatever the filter says now. */
  restores(inferenceId: string, phase: PausePhase): boolean {
    return this.restoring.get(inferenceId)?.phase === phase;
  }

  /**
   * Cold: on subscribe, registers a pause, publishes `paused`, and waits for the first of a decision, step
   * mode switched off and its deadline; publishes `resumed` and emits the resolution once (on the resume
   * scheduler), then completes. Unsubscribing first (how a run is cancelled) resolves it `cancelled`.
   */
  pause(request: PauseRequest): Observable<PauseResolution> {
    return new Observable<PauseResolution>((subscriber) => {
      const { book, hibernateAfterMs } = this;
      const now = book.scheduler.now();
      const restored = this.restoring.get(request.inference_id);
      const restore = restored?.phase === request.phase ? restored : undefined;
      if (restore) this.restoring.delete(request.inference_id);
      const info = pauseInfoOf(request, restore ?? { pause_id: this.ports.ids.next('pause'), deadline_ms: now + this.pauseTimeoutMs });
      const entry = residentPause(book, info, request, subscriber);
      // It hibernates only if its deadline does not come first.
      const hibernateAt = hibernateAfterMs === undefined || now + hibernateAfterMs >= info.deadline_ms ? undefined : now + hibernateAfterMs;
      book.add(entry, hibernateAt);
      this.ports.publish(eventFrom('paused', info, now, restore ? { pause: info, restored: true } : { pause: info }));
      return () => entry.resolve({ pause: info, reason: 'cancelled', decision: { action: 'continue' }, by: SYSTEM });
    });
  }

  /** The one entry point for decisions, local or from another instance: checked against the pause, then resolved. */
  submit(command: ContinueCommand): SubmitResult {
    const entry = this.book.get(command.pause_id);
    if (!entry) return { ok: false, error: this.book.refusal(command.pause_id) };
    const decision: PauseDecision | StepCommandError =
      tooDeep(command) ??
      (command.action === 'answer'
        ? decideAnswers(entry.info, command, entry.validateAnswer ?? schemaAnswerValidator(entry.info))
        : decide(entry.info, command, entry.validateEdit, entry.results));
    if (decision instanceof StepCommandError) return { ok: false, error: decision };
    const committed$ = entry.resolve({ pause: entry.info, reason: reasonOf(decision), decision, by: command.by ?? LOCAL }) ?? EMPTY;
    return { ok: true, pause: entry.info, committed$ };
  }

  get(pauseId: string): PauseInfo | undefined {
    return this.book.get(pauseId)?.info;
  }

  /** The conversation a pause belongs to, while pending and after it resolved (as long as it is remembered). */
  convOf(pauseId: string): string | undefined {
    return this.book.convOf(pauseId);
  }

  pending(sessionId?: string): PauseInfo[] {
    if (sessionId === undefined) return Array.from(this.book.all(), (entry) => entry.info);
    return this.book.of(sessionId).map((entry) => entry.info);
  }

  /** See `Hibernator.hibernate`. */
  hibernate(pauseId: string, wake: (resolution: PauseResolution) => void): HeldPause | undefined {
    const live = this.book.get(pauseId);
    if (!live || live.hibernated) return undefined;
    // Replacing the entry makes the resident pause's own resolve a no-op: its run can be unsubscribed.
    const held = new HibernatedPause(this.book, live.info, live, wake);
    this.book.replace(held);
    return held;
  }

  /** See `Hibernator.restoreHibernated`. */
  restoreHibernated(info: PauseInfo, checks: PauseChecks, wake: (resolution: PauseResolution) => void): HeldPause | undefined {
    const { book } = this;
    if (book.get(info.pause_id)) return undefined;
    const held = new HibernatedPause(book, info, checks, wake);
    book.add(held);
    this.ports.publish(eventFrom('paused', info, book.scheduler.now(), { pause: info, restored: true }));
    return held;
  }

  private release(sessionId: string): number {
    this.enabled.delete(sessionId);
    const released = this.book.of(sessionId).filter((entry) => !isBreakpointPause(entry.info));
    for (const entry of released) entry.resolve({ pause: entry.info, reason: 'disabled', decision: { action: 'continue' }, by: SYSTEM });
    return released.length;
  }
}

/** A pause some tool asked for itself: step mode did not cause it alone, so disabling step mode keeps it. */
const isBreakpointPause = (info: PauseInfo): boolean => info.tool_calls.some((call) => call.breakpoint === true);
