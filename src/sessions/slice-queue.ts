import type { SchedulerLike } from 'rxjs';

/**
 * Work that may wait a little, run a slice at a time on the scheduler (docs/protocol.md, Durability):
 * rebuilding the run of a hibernated pause that resolved, and hibernating the pauses that have waited
 * long enough. A pause's resolution (its `resumed` frame and its decision row) happens when it is
 * decided; the rebuild of its run, which builds its loop, runs its tools and writes again, comes
 * after. When many deadlines pass together, or many pauses restored at a start hibernate together,
 * the deadline index's timer and the store's commits run between slices instead of waiting behind all
 * of them, so each pause still resolves at its deadline. A run's own frames keep their order: its
 * rebuild publishes only after its `resumed`.
 *
 * ```
 * push a, b, c (slice fits two):  --(ab)--c--
 * ```
 */
export interface SliceQueue {
  /** Runs `work` after the work pushed before it, on a later task of the scheduler. */
  push(work: () => void): void;
  /** How many wait. */
  readonly size: number;
}

export interface SliceQueueConfig {
  /** How long one slice may run before the queue yields to the scheduler's other tasks (ms on its clock). Default 5. */
  readonly sliceMs?: number;
  /**
   * How a slice is put off. Default: the scheduler's `schedule`. A server passes `setImmediate`: the
   * slice runs after this turn's I/O and store commits, as a batch of writes does, and not a whole
   * millisecond later, which is the least a timer waits in Node.
   */
  readonly defer?: (task: () => void) => void;
}

export function createSliceQueue(scheduler: SchedulerLike, config: SliceQueueConfig = {}): SliceQueue {
  const { sliceMs = 5, defer = (task: () => void) => void scheduler.schedule(task) } = config;
  if (!(Number.isFinite(sliceMs) && sliceMs >= 0)) throw new RangeError(`createSliceQueue: sliceMs must be a non-negative number, got ${sliceMs}`);
  // A growing array read from `head`, reset once drained: a shift per item would copy the rest each time.
  // Slots already run are cleared, so what their work held can go before the rest has run.
  let waiting: Array<(() => void) | undefined> = [];
  let head = 0;
  let scheduled = false;

  const drain = (): void => {
    scheduled = false;
    const started = scheduler.now();
    try {
      // At least one per slice, so a slow clock never stalls the queue.
      do {
        const work = waiting[head];
        waiting[head++] = undefined;
        work?.();
      } while (head < waiting.length && scheduler.now() - started < sliceMs);
    } finally {
      if (head >= waiting.length) {
        waiting = [];
        head = 0;
      } else schedule();
    }
  };
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    defer(drain);
  };

  return {
    push: (work) => {
      waiting.push(work);
      schedule();
    },
    get size() {
      return waiting.length - head;
    },
  };
}
