import { catchError, concat, concatMap, from, ignoreElements, of, type Observable, type ObservableInput, type OperatorFunction } from 'rxjs';
import type { Block } from '../core/turns.js';
import { eventFrom, type EventOrigin } from '../streams/events.js';
import { hasEnded, type LoopPorts, type LoopState } from './loop-state.js';

export type SnapshotPhase = 'pre_inference' | 'post_inference' | 'post_tools';

/** The turn as it stands at a snapshot point. */
export interface Snapshot {
  readonly phase: SnapshotPhase;
  readonly run: EventOrigin;
  readonly iteration: number;
  readonly blocks: readonly Block[];
}

/** Called at each snapshot point; return an Observable or Promise to make the loop wait for it (e.g. persistence). */
export type SnapshotHook = (snapshot: Snapshot) => void | ObservableInput<unknown>;

/**
 * Calls `hook` with the turn so far at one of the loop's snapshot points, then passes the state on.
 *
 * ```
 * state:  --s----------|
 * hook:     --h|             (the hook's Observable, awaited)
 * output: ----s--------|
 * ```
 *
 * No hook: the operator is the identity. A hook returning nothing costs no time. A hook that throws
 * or errors is logged as a `log` event (level warn) and the run goes on. Ended states pass through
 * without calling the hook.
 *
 * @example
 * of(state).pipe(snapshotHook('post_tools', ports, (s) => save(s.blocks)))
 */
export function snapshotHook(
  phase: SnapshotPhase,
  ports: Pick<LoopPorts, 'publish' | 'scheduler'>,
  hook?: SnapshotHook,
): OperatorFunction<LoopState, LoopState> {
  if (!hook) return (source) => source;
  const warn = (state: LoopState, error: unknown): void => {
    const message = `snapshot hook ${phase} failed: ${error instanceof Error ? error.message : String(error)}`;
    ports.publish(eventFrom('log', state.run, ports.scheduler.now(), { level: 'warn', message }));
  };
  // concatMap: a slow hook must delay this state, never reorder it.
  return concatMap((state): Observable<LoopState> => {
    if (hasEnded(state)) return of(state);
    let output: void | ObservableInput<unknown>;
    try {
      output = hook({ phase, run: state.run, iteration: state.iteration, blocks: state.blocks });
    } catch (error) {
      warn(state, error);
      return of(state);
    }
    if (output === undefined || output === null) return of(state);
    const waited$ = from(output).pipe(
      ignoreElements(),
      catchError((error: unknown) => {
        warn(state, error);
        return of();
      }),
    );
    return concat(waited$, of(state));
  });
}
