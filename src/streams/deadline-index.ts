import type { SchedulerLike } from 'rxjs';
import { createDueQueue } from './due-queue.js';

/**
 * Timed duties of one kind by key (each resident pause's hibernation, say) in one due queue
 * (./due-queue.ts) with one timer armed for the soonest, not a scheduled action per duty. A duty is
 * its key and its time; what it does is the index's one `fire`, told the key: no closure per duty.
 * The pauses' deadlines, which outlive hibernation, need no index of keys of their own: the
 * controller's pending pauses say which stand (see `createPauseBook`).
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
  // The time each key's duty stands for: one set again for another time leaves its first in the queue, dead.
  const times = new Map<string, number>();
  const queue = createDueQueue(scheduler, {
    fire: (key) => {
      times.delete(key);
      fire(key);
    },
    isLive: (key, at) => times.get(key) === at,
    liveCount: () => times.size,
  });
  return {
    set: (key, at) => {
      if (times.get(key) === at) return;
      times.set(key, at);
      queue.add(key, at);
    },
    delete: (key) => {
      if (times.delete(key)) queue.settled();
    },
    get size() {
      return times.size;
    },
  };
}
