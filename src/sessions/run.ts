import { defer, last, map, of, tap, type Observable } from 'rxjs';
import { cancelOn } from '../operators/cancel-on.js';
import type { Block, Turn } from '../core/turns.js';
import { type LoopPorts, type LoopState, type RunContext } from '../operators/loop-state.js';
import type { Snapshot } from '../operators/snapshot-hook.js';
import { toolLoop, type ToolLoopConfig } from '../operators/tool-loop.js';
import { createEvent, type RunStatus } from '../streams/events.js';

/** How a run ended, with its turn. */
export interface RunResult {
  readonly conv_id: string;
  readonly session_id: string;
  readonly inference_id: string;
  readonly turn_id: string;
  readonly status: RunStatus;
  readonly error?: string;
  readonly turn: Turn;
}

/**
 * One run as a cold Observable: publishes `run-started`, runs the tool loop until it ends or
 * `run.cancel$` emits, publishes `run-ended`, emits the result and completes.
 * `onProgress` sees the turn at every snapshot point, so a cancelled run still keeps what it had.
 */
export function createRun$(
  ports: LoopPorts,
  config: ToolLoopConfig,
  run: RunContext,
  userBlock: Block,
  onProgress: (blocks: readonly Block[]) => void,
): Observable<RunResult> {
  return defer(() => {
    const initial: LoopState = { run, blocks: [userBlock], iteration: 0 };
    let latest = initial;
    const record = (snapshot: Snapshot): void => {
      latest = { ...latest, blocks: snapshot.blocks };
      onProgress(snapshot.blocks);
    };
    const userHook = config.onSnapshot;
    const loopConfig: ToolLoopConfig = {
      ...config,
      onSnapshot: (snapshot) => {
        record(snapshot);
        return userHook?.(snapshot);
      },
    };
    ports.publish(createEvent('run-started', run, ports.scheduler.now(), {}));
    return of(initial).pipe(
      toolLoop(ports, loopConfig),
      tap((state) => {
        latest = state;
        onProgress(state.blocks);
      }),
      // Cancellation is unsubscription: it tears down the engine call, the tools and any open pause,
      // and only then completes, so `resumed: cancelled` is published before `run-ended`.
      cancelOn(run.cancel$),
      last(undefined, initial),
      map((): RunResult => {
        // No outcome means the loop was cut short by cancel$.
        const outcome = latest.outcome ?? { status: 'cancelled' as const };
        const result: RunResult = {
          conv_id: run.conv_id,
          session_id: run.session_id,
          inference_id: run.inference_id,
          turn_id: run.turn_id,
          status: outcome.status,
          ...(outcome.error === undefined ? {} : { error: outcome.error }),
          turn: { id: run.turn_id, blocks: latest.blocks },
        };
        const error = outcome.error === undefined ? {} : { error: outcome.error };
        ports.publish(createEvent('run-ended', run, ports.scheduler.now(), { status: outcome.status, ...error }));
        return result;
      }),
    );
  });
}
