import { Observable, type OperatorFunction } from 'rxjs';
import type { Store } from '../core/store.js';
import { createCommitQueue } from './commit-queue.js';
import type { SequencedEvent } from './events.js';

/**
 * hub items -> store -> the same items, in order, each once its frame is committed (SPEC §6: a frame
 * is committed before any client receives it): a {@link createCommitQueue} as an operator.
 *
 * ```
 * items:     a-b-c----       (appendFrames called at once for each)
 * commits:   --A---(BC)      (b's and c's in one batch, as SQLite commits a tick's frames)
 * output:    --a---(bc)
 * ```
 *
 * An append that fails (closed store, seq not continuing the log) drops that item and tells
 * `onError`: a frame that is not stored is never passed on, and the stream goes on. It completes
 * once the source has and every commit has settled; unsubscribing drops what is still waiting (the
 * store commits it all the same).
 *
 * Hand-written rather than `concatMap((item) => concat(committed$, of(item)))`, which built four
 * Observables per frame: with it fanout_1 fell from 0.80x to 0.44x the raw `ws` server (bench/wire.ts,
 * same run).
 */
export function committedFrames(
  store: Pick<Store, 'appendFrames'>,
  onError: (error: unknown, item: SequencedEvent) => void = () => {},
): OperatorFunction<SequencedEvent, SequencedEvent> {
  return (items$) =>
    new Observable<SequencedEvent>((subscriber) => {
      let sourceDone = false;
      const queue = createCommitQueue(store, {
        committed: (item) => subscriber.next(item),
        failed: onError,
        drained: () => sourceDone && subscriber.complete(),
      });
      const source = items$.subscribe({
        next: (item) => queue.push(item),
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          sourceDone = true;
          if (!queue.isWaiting()) subscriber.complete();
        },
      });
      return () => {
        queue.close();
        source.unsubscribe();
      };
    });
}
