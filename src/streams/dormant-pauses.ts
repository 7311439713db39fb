import { EMPTY, type Observable, type Subscription, type Unsubscribable } from 'rxjs';
import { bindResolution } from './bound-decisions.js';
import { eventFrom, type PauseInfo } from './events.js';
import { handBack, settle, SYSTEM, type PauseBook, type PauseChecks, type PendingPause } from './pending-pauses.js';
import type { AnswerValidator } from './answer-decision.js';
import type { EditValidator, PauseResolution } from './step-commands.js';

/**
 * See `StepController.hibernate`: the pause stays pending for everyone (listings, commands, its
 * deadline) without the run that waited at it; its resolution is handed to `wake` instead, on the
 * resume scheduler, after `resumed` was published exactly as for a resident pause.
 */
export function hibernateIn(book: PauseBook, pauseId: string, wake: (resolution: PauseResolution) => void): HeldPause | undefined {
  const live = book.pendingById.get(pauseId);
  if (!live || live.dormant) return undefined;
  // Replacing the entry makes the resident pause's own resolve a no-op: its run can be unsubscribed.
  return new DormantPause(book, live.info, live, wake);
}

/**
 * See `StepController.restoreAsleep`: a stored pause pending again, as `pause` with `restore` would
 * make it, with no run waiting at it: its deadline is set and `paused` published (marked restored),
 * and its resolution is handed to `wake` as a hibernated pause's is.
 */
export function restoreAsleepIn(book: PauseBook, info: PauseInfo, checks: PauseChecks, wake: (resolution: PauseResolution) => void): HeldPause | undefined {
  if (book.pendingById.has(info.pause_id)) return undefined;
  const held = new DormantPause(book, info, checks, wake);
  book.deadlines.add(info.pause_id, info.deadline_ms);
  book.ports.publish(eventFrom('paused', info, book.scheduler.now(), { pause: info, restored: true }));
  return held;
}

/**
 * A hibernated pause as its holder (the session of its run) keeps it: unsubscribed before it resolved
 * (the run was cancelled, or suspended, muted first), it resolves `cancelled`, with no wake.
 */
export interface HeldPause extends Unsubscribable {
  readonly info: PauseInfo;
}

/**
 * A pending pause no run waits at, registered as it is made. A class: an instance may hold 100 000
 * of them for days, and its methods cost nothing per pause where a resolve and a teardown closure
 * did. It is its own teardown, and no Subscription: the four fields of one, on every pause, for the
 * one subscription it ever holds (its hand back, once it resolved).
 */
class DormantPause implements PendingPause, HeldPause {
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
    book.pendingById.set(info.pause_id, this);
  }

  /** On the prototype, not a field of every pause. */
  get dormant(): true {
    return true;
  }

  resolve(unbound: PauseResolution): Observable<never> | undefined {
    const { book, info } = this;
    if (book.pendingById.get(info.pause_id) !== this) return undefined;
    const resolution = bindResolution(unbound);
    settle(book, this, resolution);
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
