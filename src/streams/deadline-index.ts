import type { SchedulerLike, Subscription } from 'rxjs';

/**
 * Every timed duty of one step controller (each pause's deadline, each pause's hibernation) in one
 * sorted structure with one timer armed for the soonest: 100 000 paused runs cost 100 000 small heap
 * entries, not 100 000 scheduled actions (docs/protocol.md, Durability; `paused_resident_per_run`).
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
  /** Fires `fire` at `at` (epoch ms on the scheduler's clock); replaces a duty set earlier under `key`. */
  set(key: string, at: number, fire: () => void): void;
  /** Forgets the duty under `key`; nothing when there is none. */
  delete(key: string): void;
  /** How many duties wait. */
  readonly size: number;
}

interface Duty {
  readonly at: number;
  readonly order: number;
  readonly key: string;
  readonly fire: () => void;
}

const before = (a: Duty, b: Duty): boolean => a.at < b.at || (a.at === b.at && a.order < b.order);

// A binary heap with lazy deletion: a deleted duty stays in the heap until it surfaces (or the heap
// is rebuilt when dead entries outnumber live ones), so deleting is a Map delete, not a search.
export function createDeadlineIndex(scheduler: SchedulerLike): DeadlineIndex {
  const heap: Duty[] = [];
  const live = new Map<string, Duty>();
  let order = 0;
  let armed: { readonly at: number; readonly timer: Subscription } | undefined;
  let firing = false;

  const disarm = (): void => {
    armed?.timer.unsubscribe();
    armed = undefined;
  };
  const soonest = (): Duty | undefined => {
    while (heap.length > 0 && live.get(heap[0]!.key) !== heap[0]) pop(heap);
    return heap[0];
  };
  const arm = (): void => {
    if (firing) return;
    const next = soonest();
    if (!next) return disarm();
    if (armed && armed.at <= next.at) return;
    disarm();
    const at = next.at;
    armed = { at, timer: scheduler.schedule(() => fireDue(at), Math.max(0, at - scheduler.now())) };
  };
  // Everything due by the time this timer was armed for, and, when it fires late (a busy process),
  // everything due by now too: one late timer catches up at once instead of one armed time per turn
  // of the event loop, each behind the work the turn before left.
  const fireDue = (armedAt: number): void => {
    armed = undefined;
    firing = true;
    const at = Math.max(armedAt, scheduler.now());
    try {
      for (let due = soonest(); due && due.at <= at; due = soonest()) {
        pop(heap);
        live.delete(due.key);
        due.fire();
      }
    } finally {
      firing = false;
      arm();
    }
  };
  const compact = (): void => {
    if (heap.length < 64 || heap.length < 2 * live.size) return;
    heap.length = 0;
    for (const duty of live.values()) push(heap, duty);
  };

  return {
    set: (key, at, fire) => {
      const duty: Duty = { at, order: order++, key, fire };
      live.set(key, duty);
      push(heap, duty);
      compact();
      arm();
    },
    delete: (key) => {
      if (!live.delete(key)) return;
      compact();
      if (live.size === 0) {
        heap.length = 0;
        if (!firing) disarm();
      }
    },
    get size() {
      return live.size;
    },
  };
}

function push(heap: Duty[], duty: Duty): void {
  heap.push(duty);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i]!, heap[parent]!)) break;
    [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
    i = parent;
  }
}

function pop(heap: Duty[]): void {
  const last = heap.pop();
  if (heap.length === 0 || !last) return;
  heap[0] = last;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let least = i;
    if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
    if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
    if (least === i) return;
    [heap[i], heap[least]] = [heap[least]!, heap[i]!];
    i = least;
  }
}
