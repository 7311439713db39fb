import type { SchedulerLike, Subscription } from 'rxjs';
import { createDutyHeap } from './duty-heap.js';

/**
 * Timed duties of one kind (each pause's deadline, say) in one sorted structure with one timer armed
 * for the soonest: 100 000 paused runs cost 100 000 small heap entries, not 100 000 scheduled actions
 * (docs/protocol.md, Durability; `paused_resident_per_run`). A duty is its key and its time; what it
 * does is the index's one `fire`, told the key: no closure per duty.
 *
 * ```
 * set a@30, b@10:  ----------b-------------------a|
 * delete b:        ------------------------------a|
 * ```
 *
 * Duties due at the same time fire in the order they were set, as separate timers set in that order
 * did. A duty fires at its time on the scheduler's clock, never before; one deleted or replaced
 * before its time never fires. With no duty left no timer stays armed, so an idle process can exit.
 */
export interface DeadlineIndex {
  /** Fires the index's `fire` with `key` at `at` (epoch ms on the scheduler's clock); replaces a duty set earlier under `key`. */
  set(key: string, at: number): void;
  /** Forgets the duty under `key`; nothing when there is none. */
  delete(key: string): void;
  /** How many duties wait. */
  readonly size: number;
}

export function createDeadlineIndex(scheduler: SchedulerLike, fire: (key: string) => void): DeadlineIndex {
  const duties = createDutyHeap();
  let order = 0;
  let armed: { readonly at: number; readonly timer: Subscription } | undefined;
  let firing = false;

  const disarm = (): void => {
    armed?.timer.unsubscribe();
    armed = undefined;
  };
  const arm = (): void => {
    if (firing) return;
    const next = duties.soonest();
    if (!next) return disarm();
    if (armed && armed.at <= next.at) return;
    disarm();
    const at = next.at;
    armed = { at, timer: scheduler.schedule(fireDue, Math.max(0, at - scheduler.now())) };
  };
  // Everything due by now: when the timer fires late (a busy process), one late timer catches up at
  // once instead of one armed time per turn of the event loop, each behind the work the turn before
  // left; when it fires early (Node counts timers from the loop's cached time), nothing is due yet
  // and the timer is armed again for the rest.
  const fireDue = (): void => {
    armed = undefined;
    firing = true;
    const at = scheduler.now();
    try {
      for (let due = duties.takeDueBy(at); due; due = duties.takeDueBy(at)) fire(due.key);
    } finally {
      firing = false;
      arm();
    }
  };

  return {
    set: (key, at) => {
      duties.add({ at, order: order++, key });
      arm();
    },
    delete: (key) => {
      if (duties.remove(key) && duties.size === 0 && !firing) disarm();
    },
    get size() {
      return duties.size;
    },
  };
}
