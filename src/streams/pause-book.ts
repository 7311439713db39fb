import type { Observable, SchedulerLike } from 'rxjs';
import { keepNewest } from '../core/bounded-map.js';
import type { PauseChecks, StepControllerPorts } from './controller-settings.js';
import { createDeadlineIndex, type DeadlineIndex } from './deadline-index.js';
import { createDueQueue, type DueQueue } from './due-queue.js';
import { eventFrom, type PauseInfo } from './events.js';
import { StepCommandError, type PauseDecision, type PauseResolution } from './step-commands.js';

/** `by` of what no person decided: the deadline, switching step mode off, cancellation (docs/protocol.md, Durability). */
export const SYSTEM = 'system';

/** A pause waiting for its resolution, with a run waiting at it (resident) or none (hibernated): ./pending-pause.ts. */
export interface PendingPause extends PauseChecks {
  readonly info: PauseInfo;
  /**
   * Resolves the pause if it is still pending; later calls do nothing (undefined). What it returns
   * completes once the resolution is committed, or errors when the store refused a person's decision:
   * then the decision took no effect and the pause is pending again.
   */
  resolve(resolution: PauseResolution): Observable<never> | undefined;
  readonly hibernated?: true;
}

export interface PauseBookConfig {
  readonly resolvedMemory: number;
  /** What a pause's deadline decides. */
  readonly atDeadline: PauseDecision;
  /** Told of a resident pause whose hibernation came due. */
  readonly hibernationDue: (entry: PendingPause) => void;
}

/**
 * The pending pauses of a controller by id, each with its deadline (and its hibernation, while resident),
 * and the ones lately resolved: one timer for the soonest deadline, one for the soonest hibernation, and
 * a pause is pending exactly while it is in the book.
 */
export class PauseBook {
  readonly scheduler: SchedulerLike;
  private readonly entries = new Map<string, PendingPause>();
  // Insertion-ordered, so the oldest resolved ids are forgotten first.
  private readonly resolved = new Map<string, { readonly reason: PauseResolution['reason']; readonly conv_id: string }>();
  private readonly deadlines: DueQueue;
  private readonly hibernations: DeadlineIndex;

  constructor(
    private readonly ports: StepControllerPorts & { readonly resumeScheduler: SchedulerLike; readonly scheduler: SchedulerLike },
    private readonly config: PauseBookConfig,
  ) {
    const scheduler = (this.scheduler = ports.scheduler);
    this.deadlines = createDueQueue(scheduler, {
      fire: (pauseId) => this.deadlinePassed(pauseId),
      // A duty stands while its pause is pending here: the queue keeps no keys of its own.
      isLive: (pauseId, at) => this.entries.get(pauseId)?.info.deadline_ms === at,
      liveCount: () => this.entries.size,
    });
    this.hibernations = createDeadlineIndex(scheduler, (pauseId) => {
      const entry = this.entries.get(pauseId);
      if (entry) this.guarded(() => config.hibernationDue(entry));
    });
  }

  /** Where a resolved pause hands its run back. */
  get resumeScheduler(): SchedulerLike {
    return this.ports.resumeScheduler;
  }

  /** Pending from now on, until its deadline; `hibernateAt`: when it hibernates, if still pending then. */
  add(entry: PendingPause, hibernateAt?: number): void {
    const { pause_id, deadline_ms } = entry.info;
    this.entries.set(pause_id, entry);
    this.deadlines.add(pause_id, deadline_ms);
    if (hibernateAt !== undefined) this.hibernations.set(pause_id, hibernateAt);
  }

  /** The same pause held another way (hibernated): its deadline stands. */
  replace(entry: PendingPause): void {
    this.entries.set(entry.info.pause_id, entry);
  }

  get(pauseId: string): PendingPause | undefined {
    return this.entries.get(pauseId);
  }

  /** Whether `entry` is the pending pause under its id: only then does a resolution take. */
  isPending(entry: PendingPause): boolean {
    return this.entries.get(entry.info.pause_id) === entry;
  }

  /** The conversation a pause belongs to, while pending and after it resolved (as long as it is remembered). */
  convOf(pauseId: string): string | undefined {
    return this.entries.get(pauseId)?.info.conv_id ?? this.resolved.get(pauseId)?.conv_id;
  }

  all(): IterableIterator<PendingPause> {
    return this.entries.values();
  }

  // A scan rather than an index by session: an index costs heap for every paused run, and hellos,
  // listings and disable scan far less often than runs pause. A loop: copying every pending pause first cost most of the scan.
  of(sessionId: string): PendingPause[] {
    const found: PendingPause[] = [];
    for (const entry of this.entries.values()) if (entry.info.session_id === sessionId) found.push(entry);
    return found;
  }

  /** Why a decision for a pause not pending is refused: unknown, or resolved already. */
  refusal(pauseId: string): StepCommandError {
    const reason = this.resolved.get(pauseId)?.reason;
    return reason === undefined
      ? new StepCommandError('unknown_pause', `no pause with id "${pauseId}"`)
      : new StepCommandError('pause_resolved', `pause "${pauseId}" was already resolved (${reason})`, { reason });
  }

  /** Forgets a pending pause, remembers how it ended and publishes `resumed`. */
  settle(entry: PendingPause, resolution: PauseResolution): void {
    const { info } = entry;
    this.entries.delete(info.pause_id);
    this.deadlines.settled();
    this.hibernations.delete(info.pause_id);
    keepNewest(this.resolved, info.pause_id, { reason: resolution.reason, conv_id: info.conv_id }, this.config.resolvedMemory);
    // Each step is total (docs/protocol.md, Untrusted input): a resolution may run in a deadline's timer,
    // where a throw would end the process; a store that refuses the record fails that commit, seen later.
    this.guarded(() => this.ports.onResolved?.(resolution));
    this.guarded(() => this.ports.publish(eventFrom('resumed', info, this.scheduler.now(), { pause_id: info.pause_id, reason: resolution.reason, by: resolution.by ?? SYSTEM })));
  }

  /** A pause whose decision was not committed, pending again with its id and deadline; false when it cannot be. */
  reopen(entry: PendingPause): boolean {
    const { pause_id } = entry.info;
    if (this.entries.has(pause_id)) return false;
    this.resolved.delete(pause_id);
    this.add(entry);
    return true;
  }

  /** Completes once the conversation's writes so far are committed; undefined: nothing to wait for. May throw. */
  committed$(convId: string): Observable<never> | undefined {
    return this.ports.committed$?.(convId);
  }

  /** Tells the `onError` port what a resolution's part threw: nothing of it may throw out of a timer. */
  report(error: unknown): void {
    try {
      this.ports.onError?.(error);
    } catch {
      // A reporter that throws has nothing left to tell.
    }
  }

  guarded(work: () => void): void {
    try {
      work();
    } catch (error) {
      this.report(error);
    }
  }

  private deadlinePassed(pauseId: string): void {
    const entry = this.entries.get(pauseId);
    if (entry) this.guarded(() => entry.resolve({ pause: entry.info, reason: 'timeout', decision: this.config.atDeadline, by: SYSTEM }));
  }
}
