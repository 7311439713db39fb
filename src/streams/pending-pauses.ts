import { AsyncSubject, EMPTY, Observable, Subscription, type SchedulerLike } from 'rxjs';
import type { StepFilter } from '../core/store.js';
import { LeaseLostError, StoreClosedError } from '../core/store-errors.js';
import { bindResolution } from './bound-decisions.js';
import type { DeadlineIndex } from './deadline-index.js';
import type { DueQueue } from './due-queue.js';
import { eventFrom, type PauseInfo } from './events.js';
import { decide, reasonOf, StepCommandError, tooDeep, type ContinueCommand, type EditValidator, type PauseDecision, type PauseResolution, type SubmitResult } from './step-commands.js';
import { decideAnswers, schemaAnswerValidator, type AnswerValidator } from './answer-decision.js';
import type { PauseRequest, StepControllerPorts, TimeoutAction } from './step-controller.js';
import { keepNewest } from '../core/bounded-map.js';

/** `by` of what no person decided: the deadline, switching step mode off, cancellation (docs/protocol.md, Durability). */
export const SYSTEM = 'system';
/** `by` of a command that names no one: a single-user server without auth. */
const LOCAL = 'local';

export interface PendingPause extends PauseChecks {
  readonly info: PauseInfo;
  /**
   * Resolves the pause if it is still pending; later calls do nothing (undefined). A method: call it on
   * its entry. What it returns completes once the resolution is committed, or errors when the store
   * refused a person's decision: then the decision took no effect and the pause is pending again.
   */
  resolve(resolution: PauseResolution): Observable<never> | undefined;
  /** Hibernated: no run waits on it; its resolution wakes one (`hibernateIn`). */
  readonly dormant?: true;
}

/** What is kept of a resolved pause, to answer "already resolved" and whose it was. */
interface ResolvedPause {
  readonly reason: PauseResolution['reason'];
  readonly conv_id: string;
}

/** One controller's step modes and pauses, pending and lately resolved, with the settings they follow. */
export interface PauseBook {
  readonly ports: StepControllerPorts;
  readonly scheduler: SchedulerLike;
  readonly resumeScheduler: SchedulerLike;
  readonly pauseTimeoutMs: number;
  readonly timeoutAction: TimeoutAction;
  readonly resolvedMemory: number;
  /** How long a pause stays resident before `ports.hibernate` is told of it; undefined: never. */
  readonly hibernateAfterMs: number | undefined;
  /**
   * Every pending pause's deadline, one timer for the soonest; its duty resolves the pause
   * (`deadlinePassed`). A duty stands while its pause is pending here: the queue keeps no keys of its own.
   */
  readonly deadlines: DueQueue;
  /** Every resident pause's hibernation by pause id, the same way (`hibernationDue`). */
  readonly hibernations: DeadlineIndex;
  // Session -> its filter (undefined: every tool, both phases); present means step mode is on.
  readonly enabled: Map<string, StepFilter | undefined>;
  readonly pendingById: Map<string, PendingPause>;
  // Insertion-ordered, so the oldest resolved ids are forgotten first.
  readonly resolved: Map<string, ResolvedPause>;
}

// A scan rather than an index by session: an index costs heap for every paused run (a Map entry and
// a Set), and hellos, listings and disable scan far less often than runs pause. A
// loop, not a spread and a filter: copying every pending pause first cost most of the scan.
export function pendingOf(book: PauseBook, sessionId: string): PendingPause[] {
  const found: PendingPause[] = [];
  for (const entry of book.pendingById.values()) if (entry.info.session_id === sessionId) found.push(entry);
  return found;
}

/** Forgets a pending pause, remembers how it ended and publishes `resumed`. */
export function settle(book: PauseBook, entry: PendingPause, resolution: PauseResolution): void {
  const { info } = entry;
  const { pendingById, resolved, ports, deadlines, hibernations } = book;
  pendingById.delete(info.pause_id);
  deadlines.settled();
  hibernations.delete(info.pause_id);
  keepNewest(resolved, info.pause_id, { reason: resolution.reason, conv_id: info.conv_id }, book.resolvedMemory);
  // Each step is total (docs/protocol.md, Untrusted input): a resolution may run in a deadline's timer,
  // where a throw would end the process; a store that refuses the record fails that commit, seen below.
  guarded(book, () => ports.onResolved?.(resolution));
  guarded(book, () => ports.publish(eventFrom('resumed', info, book.scheduler.now(), { pause_id: info.pause_id, reason: resolution.reason, by: resolution.by ?? SYSTEM })));
}

/** Runs `work`, telling the controller's `onError` port what it threw instead of throwing it. */
export function guarded(book: PauseBook, work: () => void): void {
  try {
    work();
  } catch (error) {
    try {
      book.ports.onError?.(error);
    } catch {
      // A reporter that throws has nothing left to tell.
    }
  }
}

function timeoutDecision(timeoutAction: TimeoutAction): PauseDecision {
  return timeoutAction === 'continue'
    ? { action: 'continue' }
    : timeoutAction === 'deny'
      ? { action: 'deny', reason: 'the pause deadline passed' }
      : { action: 'abort', reason: 'the pause deadline passed (timeout action: abort)' };
}

/** The pause as it is published: a restored one keeps its id and deadline. */
function pauseInfoOf(book: PauseBook, request: PauseRequest, now: number): PauseInfo {
  const { restore } = request;
  return {
    pause_id: restore?.pause_id ?? book.ports.ids.next('pause'),
    phase: request.phase,
    summary: request.summary,
    deadline_ms: restore?.deadline_ms ?? now + book.pauseTimeoutMs,
    conv_id: request.conv_id,
    session_id: request.session_id,
    inference_id: request.inference_id,
    turn_id: request.turn_id,
    tool_calls: request.tool_calls,
    ...questionOf(request),
  };
}

/** A pause with a question says so, with the first question's schema (docs/protocol.md, Questions for a human). */
function questionOf(request: PauseRequest): Pick<PauseInfo, 'kind' | 'answer_schema'> {
  const question = request.tool_calls.find((call) => call.answer_schema !== undefined);
  return question?.answer_schema ? { kind: 'question', answer_schema: question.answer_schema } : {};
}

// Hand-written rather than `race(commands$.pipe(filter(mine)), timer(deadline)).pipe(take(1), tap,
// observeOn)`: that composition held far more per paused run than the heap target allows (each
// live operator layer costs heap); this one Observable holds what
// the race did. The first of a command, disable and the deadline wins; unsubscription cancels.
/** See `StepController.pause`. */
export function pause$(book: PauseBook, request: PauseRequest): Observable<PauseResolution> {
  return new Observable<PauseResolution>((subscriber) => {
    const now = book.scheduler.now();
    const info = pauseInfoOf(book, request, now);
    const resolve = (unbound: PauseResolution): Observable<never> | undefined => {
      // Still pending is what makes it the first: the registry is the one record of that.
      if (book.pendingById.get(info.pause_id) !== entry) return undefined;
      const resolution = bindResolution(unbound);
      settle(book, entry, resolution);
      const handing = handBack(book, entry, resolution, () => {
        subscriber.next(resolution);
        subscriber.complete();
      });
      subscriber.add(handing);
      return handing.outcome$;
    };
    const entry: PendingPause = { info, validateEdit: request.validateEdit ?? (() => []), validateAnswer: request.validateAnswer, results: request.results ?? NO_RESULTS, resolve };
    book.pendingById.set(info.pause_id, entry);
    schedulePause(book, info, now);
    book.ports.publish(eventFrom('paused', info, now, request.restore ? { pause: info, restored: true } : { pause: info }));
    // Unsubscribed before it resolved: the run was cancelled.
    return () => resolve({ pause: info, reason: 'cancelled', decision: { action: 'continue' }, by: SYSTEM });
  });
}

/** The pause's deadline, and its hibernation when that comes first, each in the controller's index of its kind. */
function schedulePause(book: PauseBook, info: PauseInfo, now: number): void {
  const { pause_id, deadline_ms } = info;
  book.deadlines.add(pause_id, deadline_ms);
  const { hibernateAfterMs, ports } = book;
  if (hibernateAfterMs === undefined || !ports.hibernate || now + hibernateAfterMs >= deadline_ms) return;
  book.hibernations.set(pause_id, now + hibernateAfterMs);
}

/** A pause's deadline passed: it resolves with the timeout action. */
export function deadlinePassed(book: PauseBook, pauseId: string): void {
  const entry = book.pendingById.get(pauseId);
  // In a timer: nothing it does may throw out of it.
  if (entry) guarded(book, () => entry.resolve({ pause: entry.info, reason: 'timeout', decision: timeoutDecision(book.timeoutAction), by: SYSTEM }));
}

/** A resident pause has waited `hibernateAfterMs`: the hibernate port is told of it. */
export function hibernationDue(book: PauseBook, pauseId: string): void {
  const entry = book.pendingById.get(pauseId);
  if (entry) guarded(book, () => book.ports.hibernate?.(entry.info));
}

/** What a command is checked against at a pause: edited arguments, answers, and the results an edit replaces. */
export interface PauseChecks {
  readonly validateEdit: EditValidator;
  /** Undefined: answers are checked against the schemas the pause carries. */
  readonly validateAnswer: AnswerValidator | undefined;
  readonly results: Readonly<Record<string, unknown>>;
}

/** A resolution being handed back to its run; `outcome$` says whether it was committed (see `PendingPause.resolve`). */
export interface HandBack extends Subscription {
  readonly outcome$: Observable<never>;
}

/**
 * Hands a resolved pause's run back: on the resume scheduler, so after whoever resolved it (an HTTP
 * handler) has returned, and once its resolution (the `resumed` frame, the decision row) is committed,
 * so the decision's reply and frame go out before the run's next work and that work does not join
 * their batch. A person's decision the store refused takes no effect (docs/protocol.md, A 200 means
 * committed): the pause is pending again, as its clients still see it, and the command hears why.
 * Otherwise, committed or not, the run goes on, as it did before it paused: a deposed owner's run is
 * stopped by its fenced writes (docs/protocol.md, Several instances).
 */
export function handBack(book: PauseBook, entry: PendingPause, resolution: PauseResolution, work: () => void): HandBack {
  const outcome = new AsyncSubject<never>();
  const held = Object.assign(new Subscription(), { outcome$: outcome.asObservable() });
  const resume = (): void => void held.add(book.resumeScheduler.schedule(work));
  const go = (): void => {
    outcome.complete();
    resume();
  };
  const failed = (error: unknown): void => {
    guarded(book, () => {
      throw error;
    });
    const reopened = isDecision(resolution) && !isOwnerGone(error) && reopen(book, entry);
    outcome.error(error);
    if (!reopened) resume();
  };
  let committed$: Observable<never> | undefined;
  try {
    committed$ = book.ports.committed$?.(entry.info.conv_id);
  } catch (error) {
    failed(error);
    return held;
  }
  if (committed$) held.add(committed$.subscribe({ complete: go, error: failed }));
  else go();
  return held;
}

/** A decision someone took: the deadline, disabling step mode and cancellation are the system's, and go on whatever. */
const isDecision = (resolution: PauseResolution): boolean => resolution.by !== SYSTEM && resolution.reason !== 'cancelled';

/** The run is not this process's to write any more (another instance owns it, the store closed): nothing to reopen. */
const isOwnerGone = (error: unknown): boolean => error instanceof LeaseLostError || error instanceof StoreClosedError;

/** A pause whose resolution was not committed, pending again with its id and deadline; false when it cannot be. */
function reopen(book: PauseBook, entry: PendingPause): boolean {
  const { pause_id, deadline_ms } = entry.info;
  if (book.pendingById.has(pause_id)) return false;
  book.pendingById.set(pause_id, entry);
  book.resolved.delete(pause_id);
  book.deadlines.add(pause_id, deadline_ms);
  return true;
}

/** See `StepController.submit`. */
export function submitTo(book: PauseBook, command: ContinueCommand): SubmitResult {
  const entry = book.pendingById.get(command.pause_id);
  if (!entry) {
    const reason = book.resolved.get(command.pause_id)?.reason;
    const error =
      reason === undefined
        ? new StepCommandError('unknown_pause', `no pause with id "${command.pause_id}"`)
        : new StepCommandError('pause_resolved', `pause "${command.pause_id}" was already resolved (${reason})`, {
            reason,
          });
    return { ok: false, error };
  }
  const decision =
    tooDeep(command) ??
    (command.action === 'answer'
      ? decideAnswers(entry.info, command, entry.validateAnswer ?? schemaAnswerValidator(entry.info))
      : decide(entry.info, command, entry.validateEdit, entry.results));
  if (decision instanceof StepCommandError) return { ok: false, error: decision };
  const committed$ = entry.resolve({ pause: entry.info, reason: reasonOf(decision), decision, by: command.by ?? LOCAL }) ?? EMPTY;
  return { ok: true, pause: entry.info, committed$ };
}

/** See `StepController.disable`: step mode off, and the pauses it caused released. */
export function disableIn(book: PauseBook, sessionId: string): number {
  book.enabled.delete(sessionId);
  const released = pendingOf(book, sessionId).filter((entry) => !isBreakpointPause(entry.info));
  for (const entry of released) entry.resolve({ pause: entry.info, reason: 'disabled', decision: { action: 'continue' }, by: SYSTEM });
  return released.length;
}

const NO_RESULTS: Readonly<Record<string, unknown>> = Object.freeze({});

/** A pause some tool asked for itself: step mode did not cause it alone, so disabling step mode keeps it. */
const isBreakpointPause = (info: PauseInfo): boolean => info.tool_calls.some((call) => call.breakpoint === true);
