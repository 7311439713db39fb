/** A duty of the deadline index (./deadline-index.ts): whose it is, when it fires, and in which order among equals. */
export interface Duty {
  readonly at: number;
  readonly order: number;
  readonly key: string;
}

const before = (a: Duty, b: Duty): boolean => a.at < b.at || (a.at === b.at && a.order < b.order);

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

/** The duties by time, soonest first (ties: the order they were set), one live duty per key. */
export interface DutyHeap {
  /** Adds a duty, replacing the live one under its key. */
  add(duty: Duty): void;
  /** Forgets the live duty under `key`; false when there was none. */
  remove(key: string): boolean;
  /** The soonest live duty, left in place. */
  soonest(): Duty | undefined;
  /** Takes the soonest live duty out when it is due by `at`. */
  takeDueBy(at: number): Duty | undefined;
  readonly size: number;
}

/**
 * A binary heap with lazy deletion: a deleted or replaced duty stays in the heap until it surfaces
 * (or the heap is rebuilt when dead entries outnumber live ones), so deleting is a Map delete, not a search.
 */
export function createDutyHeap(): DutyHeap {
  const heap: Duty[] = [];
  const live = new Map<string, Duty>();
  const soonest = (): Duty | undefined => {
    while (heap.length > 0 && live.get(heap[0]!.key) !== heap[0]) pop(heap);
    return heap[0];
  };
  const compact = (): void => {
    if (heap.length < 64 || heap.length < 2 * live.size) return;
    heap.length = 0;
    for (const duty of live.values()) push(heap, duty);
  };
  return {
    add: (duty) => {
      live.set(duty.key, duty);
      push(heap, duty);
      compact();
    },
    remove: (key) => {
      if (!live.delete(key)) return false;
      if (live.size === 0) heap.length = 0;
      else compact();
      return true;
    },
    soonest,
    takeDueBy: (at) => {
      const due = soonest();
      if (!due || due.at > at) return undefined;
      pop(heap);
      live.delete(due.key);
      return due;
    },
    get size() {
      return live.size;
    },
  };
}
