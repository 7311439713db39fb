import { EMPTY, throwError, type Observable, type Observer } from 'rxjs';
import { failureOf, PartialCommitFailure } from '../core/commit-failure.js';
import type { Store } from '../core/store.js';
import type { SequencedEvent } from './events.js';

/** Where a commit queue passes its items on. */
export interface CommitQueueTarget {
  /** An item whose frame is committed, as is every item's before it; in the order they were pushed. */
  committed(item: SequencedEvent): void;
  /** An item whose append failed (closed store, seq not continuing the log): it is not passed on. */
  failed(error: unknown, item: SequencedEvent): void;
  /** Nothing waits any more (called after the queue emptied, not for an item that never waited). */
  drained?(): void;
}

/**
 * Hub items -> store -> the same items, in order, each once its frame is committed (docs/protocol.md, Durability: a frame
 * is committed before any client receives it).
 *
 * ```
 * push:      a-b-c----       (appendFrames called at once for each)
 * commits:   --A---(BC)      (b's and c's in one batch, as SQLite commits a tick's frames)
 * committed: --a---(bc)
 * ```
 *
 * `appendFrames` is called as each item is pushed, not when the previous commit completes, so one
 * tick's frames join one SQLite transaction; with the memory store the commit completes
 * synchronously and the item goes on at once, allocating nothing.
 */
export interface CommitQueue {
  push(item: SequencedEvent): void;
  /** Whether any item waits for its commit (or for the commits before it). */
  isWaiting(): boolean;
  /** The conversation's first item still waiting for its commit (or for the commits before it). */
  firstWaiting(convId: string): SequencedEvent | undefined;
  /** Drops what is waiting: the store commits it all the same; failures are still reported, nothing is passed on. */
  close(): void;
}

/**
 * Consecutive items waiting for one commit, or for the commits of the items before them; it observes
 * its commit itself, so an append costs no closure, which would be one more allocation per frame.
 */
class Pending implements Observer<never> {
  state: 'committing' | 'committed' | 'failed' = 'committing';
  readonly items: SequencedEvent[];
  constructor(
    item: SequencedEvent,
    readonly commit$: Observable<never>,
    private readonly settled: (pending: Pending, error?: unknown) => void,
  ) {
    this.items = [item];
  }
  next(): void {}
  error(error: unknown): void {
    this.state = 'failed';
    this.settled(this, error);
  }
  complete(): void {
    this.state = 'committed';
    this.settled(this);
  }
}

/**
 * A queue rather than an operator: the frame log pushes every hub frame into it from its one
 * subscription. Behind `tap` and an operator of its own (a `committedFrames` that wrapped this queue
 * in an Observable, since deleted), the frame log's two more subscriber layers and its own list of
 * frames in flight cost a measurable share of every step, where every event passes them.
 */
export function createCommitQueue(store: Pick<Store, 'appendFrames'>, target: CommitQueueTarget): CommitQueue {
  const waiting: Pending[] = [];
  let draining = false;
  let closed = false;
  // Passes on from the head while its commit has settled; an item passed on may cause new ones (a
  // subscriber publishing), which the loop already running picks up in order.
  const drain = (): void => {
    if (draining) return;
    draining = true;
    try {
      while (waiting.length > 0 && (waiting[0] as Pending).state !== 'committing') {
        const { items, state } = waiting.shift() as Pending;
        if (state === 'committed') for (const item of items) target.committed(item);
      }
    } finally {
      draining = false;
    }
    if (waiting.length === 0) target.drained?.();
  };
  const settled = (pending: Pending, error?: unknown): void => {
    if (pending.state === 'failed') sortFailed(pending, error, target);
    if (!closed) drain();
  };
  return {
    push: (item) => {
      const committed$ = appendOf(store, item);
      // Committed already (the memory store) and nothing before it waiting: on at once.
      if (committed$ === EMPTY && waiting.length === 0 && !draining) {
        target.committed(item);
        return;
      }
      // The SQLite store's appends of one batch share its Observable (write-queue.ts): one
      // subscription per batch rather than per frame. Subscribed per frame, each of a batch's many
      // frames joined the batch's AsyncSubject, and its completion removed each from the subject's
      // observers one search at a time: a clear share of every durable step's cost.
      const last = waiting[waiting.length - 1];
      if (last?.commit$ === committed$ && last.state === 'committing') {
        last.items.push(item);
        return;
      }
      const pending = new Pending(item, committed$, settled);
      waiting.push(pending);
      // Not kept: a commit settles on its own, and after `close` passes nothing on.
      committed$.subscribe(pending);
    },
    isWaiting: () => waiting.length > 0,
    firstWaiting: (convId) => {
      for (const pending of waiting) for (const item of pending.items) if (item.event.conv_id === convId) return item;
      return undefined;
    },
    close: () => {
      closed = true;
      waiting.length = 0;
    },
  };
}

const NONE: readonly SequencedEvent[] = Object.freeze([]);

/** A batch that failed for some conversations only: the others' items are committed and go on; the rest are told as failed. */
function sortFailed(pending: Pending, error: unknown, target: CommitQueueTarget): void {
  const kept = error instanceof PartialCommitFailure ? pending.items.filter((item) => failureOf(error, item.event.conv_id) === undefined) : NONE;
  for (const item of pending.items) if (!kept.includes(item)) target.failed(failureOf(error, item.event.conv_id), item);
  if (kept.length > 0) {
    pending.items.splice(0, pending.items.length, ...kept);
    pending.state = 'committed';
  }
}

/** The commit of one item's frame; a failure to append is that commit's error. */
function appendOf(store: Pick<Store, 'appendFrames'>, item: SequencedEvent): Observable<never> {
  try {
    return store.appendFrames([item]);
  } catch (error) {
    // A closed store throws at once rather than erroring its Observable.
    return throwError(() => error);
  }
}
