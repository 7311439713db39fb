import type { SchedulerLike, Subscription } from 'rxjs';

/** What a due queue asks its owner: what to do when a duty is due, and which duties still stand. */
export interface DueQueuePorts {
  /** The duty under `key` is due (and still stands). */
  readonly fire: (key: string) => void;
  /**
   * Whether the duty set under `key` for `at` still stands. The owner knows already (a pause still
   * pending with that deadline), so the queue keeps no index of its own to look it up.
   */
  readonly isLive: (key: string, at: number) => boolean;
  /** How many duties stand. */
  readonly liveCount: () => number;
}

/** Timed duties, soonest first, with one timer armed for the soonest; see `createDueQueue`. */
export interface DueQueue {
  /** Adds the duty `key` due at `at` (epoch ms on the scheduler's clock). */
  add(key: string, at: number): void;
  /** A duty may no longer stand (its owner dropped it): with none left, no timer stays armed. */
  settled(): void;
}

/**
 * A binary heap in three parallel arrays (keys, times, the order duties were added) with lazy
 * deletion: a duty that no longer stands stays until it surfaces, or until the heap is rebuilt once
 * most of it has gone. A duty costs three array slots, and the times are unboxed doubles: no object,
 * no boxed number and no map entry per duty, which 100 000 hibernated pauses each have one of
 * (docs/protocol.md, Durability). Duties due at the same time fire in the order they were added.
 *
 * It fires at a duty's time on the scheduler's clock, never before: when the timer fires late (a busy
 * process), every duty due by then fires at once instead of one armed time per turn of the event
 * loop; when it fires early (Node counts timers from the loop's cached time), nothing is due yet and
 * the timer is armed again for the rest.
 */
export function createDueQueue(scheduler: SchedulerLike, ports: DueQueuePorts): DueQueue {
  const heap = new TimeHeap();
  let added = 0;
  let armed: { readonly at: number; readonly timer: Subscription } | undefined;
  let firing = false;

  const live = (i: number): boolean => ports.isLive(heap.keys[i] as string, heap.ats[i] as number);
  const soonest = (): number | undefined => {
    while (heap.size > 0 && !live(0)) heap.pop();
    return heap.size > 0 ? heap.ats[0] : undefined;
  };
  const disarm = (): void => {
    armed?.timer.unsubscribe();
    armed = undefined;
  };
  const arm = (): void => {
    if (firing) return;
    const at = soonest();
    if (at === undefined) return disarm();
    if (armed && armed.at <= at) return;
    disarm();
    armed = { at, timer: scheduler.schedule(fireDue, Math.max(0, at - scheduler.now())) };
  };
  const fireDue = (): void => {
    armed = undefined;
    firing = true;
    const now = scheduler.now();
    try {
      for (let at = soonest(); at !== undefined && at <= now; at = soonest()) {
        const key = heap.keys[0] as string;
        heap.pop();
        ports.fire(key);
      }
    } finally {
      firing = false;
      arm();
    }
  };
  // Rebuilt once dead duties outnumber live ones, so the heap stays within twice what stands.
  const compact = (): void => {
    if (heap.size >= 64 && heap.size >= 2 * ports.liveCount()) heap.keep(live);
  };

  return {
    add: (key, at) => {
      heap.push(key, at, added++);
      compact();
      arm();
    },
    settled: () => {
      if (ports.liveCount() > 0) return compact();
      heap.clear();
      if (!firing) disarm();
    },
  };
}

/** The heap itself: entry i is keys[i], due at ats[i], added as the orders[i]-th. */
class TimeHeap {
  keys: string[] = [];
  ats: number[] = [];
  orders: number[] = [];

  get size(): number {
    return this.keys.length;
  }

  push(key: string, at: number, order: number): void {
    this.keys.push(key);
    this.ats.push(at);
    this.orders.push(order);
    this.up(this.keys.length - 1);
  }

  /** Removes the soonest. */
  pop(): void {
    const last = this.keys.length - 1;
    // Emptied, its arrays go: drained by popping, they would keep the room of the most they ever held.
    if (last <= 0) return this.clear();
    this.move(last, 0);
    this.keys.pop();
    this.ats.pop();
    this.orders.pop();
    if (last > 1) this.down(0);
  }

  clear(): void {
    this.keys = [];
    this.ats = [];
    this.orders = [];
  }

  /** Keeps only the entries `wanted` says to, in heap order again. */
  keep(wanted: (i: number) => boolean): void {
    let kept = 0;
    for (let i = 0; i < this.keys.length; i += 1) if (wanted(i)) this.move(i, kept++);
    this.keys.length = kept;
    this.ats.length = kept;
    this.orders.length = kept;
    for (let i = (kept >> 1) - 1; i >= 0; i -= 1) this.down(i);
  }

  private before(a: number, b: number): boolean {
    const { ats, orders } = this;
    return (ats[a] as number) < (ats[b] as number) || (ats[a] === ats[b] && (orders[a] as number) < (orders[b] as number));
  }

  private move(from: number, to: number): void {
    this.keys[to] = this.keys[from] as string;
    this.ats[to] = this.ats[from] as number;
    this.orders[to] = this.orders[from] as number;
  }

  private swap(a: number, b: number): void {
    const { keys, ats, orders } = this;
    [keys[a], keys[b]] = [keys[b] as string, keys[a] as string];
    [ats[a], ats[b]] = [ats[b] as number, ats[a] as number];
    [orders[a], orders[b]] = [orders[b] as number, orders[a] as number];
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    const size = this.keys.length;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < size && this.before(left, least)) least = left;
      if (right < size && this.before(right, least)) least = right;
      if (least === i) return;
      this.swap(i, least);
      i = least;
    }
  }
}
