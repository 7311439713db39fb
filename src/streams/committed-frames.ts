import { catchError, concat, concatMap, EMPTY, map, of, type Observable, type OperatorFunction } from 'rxjs';
import type { Store } from '../core/store.js';
import type { SequencedEvent } from './events.js';

/**
 * hub items -> store -> the same items, in order, each once its frame is committed (SPEC §6: a frame
 * is committed before any client receives it). `appendFrames` is called as each item arrives, not when
 * the previous commit completes, so one tick's frames join one SQLite transaction; with the memory
 * store the commit completes synchronously and the timing is the hub's.
 * An append that fails (closed store, seq not continuing the log) drops that item and tells `onError`:
 * a frame that is not stored is never fanned out, and the stream goes on.
 */
export function committedFrames(store: Store, onError: (error: unknown) => void = () => {}): OperatorFunction<SequencedEvent, SequencedEvent> {
  const append = (item: SequencedEvent): Observable<never> => {
    try {
      return store.appendFrames([item]);
    } catch (error) {
      // A closed store throws at once rather than erroring its Observable.
      onError(error);
      return EMPTY;
    }
  };
  return (items$) =>
    items$.pipe(
      map((item) => ({ item, committed$: append(item) })),
      concatMap(({ item, committed$ }) =>
        concat(committed$, of(item)).pipe(
          catchError((error: unknown) => {
            onError(error);
            return EMPTY;
          }),
        ),
      ),
    );
}
