import { AsyncSubject, EMPTY, Subscription, type Observable, type Subscriber } from 'rxjs';
import { LeaseLostError, StoreClosedError } from '../core/store-errors.js';
import type { AnswerValidator } from './answer-decision.js';
import type { HeldPause, PauseChecks, PauseRequest } from './controller-settings.js';
import type { PauseInfo } from './events.js';
import { SYSTEM, type PauseBook, type PendingPause } from './pause-book.js';
import { bindResolution, type EditValidator, type PauseResolution } from './step-commands.js';

/**
 * A pending pause, in one of two forms the book (./pause-book.ts) keeps alike: resident, with its run
 * waiting at it, or hibernated, its run out of memory until its resolution wakes it.
 */

/** The pause as it is published, with its id and deadline (a restored one keeps its own). */
export function pauseInfoOf(request: PauseRequest, { pause_id, deadline_ms }: Pick<PauseInfo, 'pause_id' | 'deadline_ms'>): PauseInfo {
  const question = request.tool_calls.find((call) => call.answer_schema !== undefined);
  return {
    pause_id,
    phase: request.phase,
    summary: request.summary,
    deadline_ms,
    conv_id: request.conv_id,
    session_id: request.session_id,
    inference_id: request.inference_id,
    turn_id: request.turn_id,
    tool_calls: request.tool_calls,
    // A pause with a question says so, with the first question's schema (docs/protocol.md, Questions for a human).
    ...(question?.answer_schema ? { kind: 'question' as const, answer_schema: question.answer_schema } : {}),
    ...(request.depth === undefined ? {} : { depth: request.depth, path: request.path ?? [] }),
  };
}

const NO_RESULTS: Readonly<Record<string, unknown>> = Object.freeze({});

/** The pause a run waits at: its resolution goes to the run's subscriber. */
export function residentPause(book: PauseBook, info: PauseInfo, checks: Partial<PauseChecks>, subscriber: Subscriber<PauseResolution>): PendingPause {
  const entry: PendingPause = {
    info,
    validateEdit: checks.validateEdit ?? (() => []),
    validateAnswer: checks.validateAnswer,
    results: checks.results ?? NO_RESULTS,
    resolve: (unbound) => {
      if (!book.isPending(entry)) return undefined;
      const resolution = bindResolution(unbound);
      book.settle(entry, resolution);
      const handing = handBack(book, entry, resolution, () => {
        subscriber.next(resolution);
        subscriber.complete();
      });
      subscriber.add(handing);
      return handing.outcome$;
    },
  };
  return entry;
}

/**
 * A pending pause no run waits at (docs/protocol.md, Durability): its resolution is handed to `wake`,
 * which rebuilds the run. A class: an instance may hold a great many of them for days, and its methods
 * cost nothing per pause where a closure each did. It is its own teardown, and no Subscription: the
 * fields of one, on every pause, for the one subscription it ever holds (its hand back, once resolved).
 */
export class HibernatedPause implements PendingPause, HeldPause {
  // Only once it resolved, so only such pauses carry it.
  declare private handing?: Subscription;
  // Copied, not referenced: a resident entry's resolve holds the subscriber of the run being freed.
  readonly validateEdit: EditValidator;
  readonly validateAnswer: AnswerValidator | undefined;
  readonly results: Readonly<Record<string, unknown>>;

  constructor(
    private readonly book: PauseBook,
    readonly info: PauseInfo,
    checks: PauseChecks,
    private readonly wake: (resolution: PauseResolution) => void,
  ) {
    this.validateEdit = checks.validateEdit;
    this.validateAnswer = checks.validateAnswer;
    this.results = checks.results;
  }

  /** On the prototype, not a field of every pause. */
  get hibernated(): true {
    return true;
  }

  resolve(unbound: PauseResolution): Observable<never> | undefined {
    const { book } = this;
    if (!book.isPending(this)) return undefined;
    const resolution = bindResolution(unbound);
    book.settle(this, resolution);
    if (resolution.reason === 'cancelled') return EMPTY;
    const handing = handBack(book, this, resolution, () => this.wake(resolution));
    this.handing = handing;
    return handing.outcome$;
  }

  /** Idempotent: resolving does nothing once it resolved, and its hand back ends once. */
  unsubscribe(): void {
    this.resolve({ pause: this.info, reason: 'cancelled', decision: { action: 'continue' }, by: SYSTEM });
    this.handing?.unsubscribe();
  }
}

/** A resolution being handed back to its run; `outcome$` says whether it was committed (see `PendingPause.resolve`). */
interface HandBack extends Subscription {
  readonly outcome$: Observable<never>;
}

/**
 * Hands a resolved pause's run back: on the resume scheduler, so after whoever resolved it (an HTTP
 * handler) has returned, and once its resolution (the `resumed` frame, the decision row) is committed,
 * so the decision's reply and frame go out before the run's next work and that work does not join
 * their batch. A person's decision the store refused takes no effect (docs/protocol.md, A 200 means
 * committed): the pause is pending again, as its clients still see it, and the command hears why.
 * Otherwise, committed or not, the run goes on, as it did before it paused: a deposed instance's run is
 * stopped by its fenced writes (docs/protocol.md, Several instances).
 */
function handBack(book: PauseBook, entry: PendingPause, resolution: PauseResolution, work: () => void): HandBack {
  const outcome = new AsyncSubject<never>();
  const held = Object.assign(new Subscription(), { outcome$: outcome.asObservable() });
  const resume = (): void => void held.add(book.resumeScheduler.schedule(work));
  const failed = (error: unknown): void => {
    book.report(error);
    const reopened = isDecision(resolution) && !isInstanceGone(error) && book.reopen(entry);
    outcome.error(error);
    if (!reopened) resume();
  };
  let committed$: Observable<never> | undefined;
  try {
    committed$ = book.committed$(entry.info.conv_id);
  } catch (error) {
    failed(error);
    return held;
  }
  const go = (): void => {
    outcome.complete();
    resume();
  };
  if (committed$) held.add(committed$.subscribe({ complete: go, error: failed }));
  else go();
  return held;
}

/** A decision someone took: the deadline, disabling step mode and cancellation are the system's, and go on whatever. */
const isDecision = (resolution: PauseResolution): boolean => resolution.by !== SYSTEM && resolution.reason !== 'cancelled';

/** The run is not this instance's to write any more (another runs it, the store closed): nothing to reopen. */
const isInstanceGone = (error: unknown): boolean => error instanceof LeaseLostError || error instanceof StoreClosedError;
