import { EMPTY, Observable, throwError, type Observer, type OperatorFunction } from 'rxjs';
import type { Store } from '../core/store.js';
import type { SequencedEvent } from './events.js';

/**
 * Consecutive items waiting for one commit, or for the commits of the items before them; it observes
 * its commit itself, so an append costs no closure (one per frame showed in fanout_1's profile).
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
 * hub items -> store -> the same items, in order, each once its frame is committed (SPEC §6: a frame
 * is committed before any client receives it).
 *
 * ```
 * items:     a-b-c----       (appendFrames called at once for each)
 * commits:   --A---(BC)      (b's and c's in one batch, as SQLite commits a tick's frames)
 * output:    --a---(bc)
 * ```
 *
 * `appendFrames` is called as each item arrives, not when the previous commit completes, so one
 * tick's frames join one SQLite transaction; with the memory store the commit completes
 * synchronously and the timing is the hub's. An append that fails (closed store, seq not continuing
 * the log) drops that item and tells `onError`: a frame that is not stored is never fanned out, and
 * the stream goes on. It completes once the source has and every commit has settled; unsubscribing
 * drops what is still waiting (the store commits it all the same).
 *
 * Hand-written rather than `concatMap((item) => concat(committed$, of(item)))`, which built four
 * Observables per frame: with it fanout_1 fell from 0.80x to 0.44x the raw `ws` server (bench/wire.ts,
 * same run). This keeps a queue of waiting items, one subscriber per pending commit and none for a
 * commit already done: CPU per frame delivered to one client is that of no store at all (7.0 µs both,
 * median of 3x7 bursts of 100 000 frames).
 */
export function committedFrames(
  store: Store,
  onError: (error: unknown, item: SequencedEvent) => void = () => {},
): OperatorFunction<SequencedEvent, SequencedEvent> {
  return (items$) =>
    new Observable<SequencedEvent>((subscriber) => {
      const waiting: Pending[] = [];
      let draining = false;
      let sourceDone = false;
      let closed = false;
      // Emits from the head while its commit has settled; an item emitted may cause new ones (a
      // subscriber publishing), which the loop already running picks up in order.
      const drain = (): void => {
        if (draining) return;
        draining = true;
        try {
          while (waiting.length > 0 && (waiting[0] as Pending).state !== 'committing') {
            const { items, state } = waiting.shift() as Pending;
            if (state === 'committed') for (const item of items) subscriber.next(item);
          }
        } finally {
          draining = false;
        }
        if (sourceDone && waiting.length === 0) subscriber.complete();
      };
      const settled = (pending: Pending, error?: unknown): void => {
        if (pending.state === 'failed') for (const item of pending.items) onError(error, item);
        if (!closed) drain();
      };
      const source = items$.subscribe({
        next: (item) => {
          let committed$: Observable<never>;
          try {
            committed$ = store.appendFrames([item]);
          } catch (error) {
            // A closed store throws at once rather than erroring its Observable.
            committed$ = throwError(() => error);
          }
          // Committed already (the memory store) and nothing before it waiting: on at once, allocating nothing.
          if (committed$ === EMPTY && waiting.length === 0 && !draining) {
            subscriber.next(item);
            return;
          }
          // The SQLite store's appends of one batch share its Observable (write-queue.ts): one
          // subscription per batch rather than per frame. Each of loop_step_sqlite's 380 frames a
          // batch subscribed to the batch's AsyncSubject, and its completion removed each from the
          // subject's observers: about 0.2 ms a batch, loop_step_sqlite -11% in an A/B run.
          const last = waiting[waiting.length - 1];
          if (last?.commit$ === committed$ && last.state === 'committing') {
            last.items.push(item);
            return;
          }
          const pending = new Pending(item, committed$, settled);
          waiting.push(pending);
          // Not kept: a commit settles on its own, and after teardown its settling is ignored.
          committed$.subscribe(pending);
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          sourceDone = true;
          drain();
        },
      });
      return () => {
        closed = true;
        waiting.length = 0;
        source.unsubscribe();
      };
    });
}
