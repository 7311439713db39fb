import { Observable, of, type OperatorFunction, type Subscription } from 'rxjs';
import { pendingToolCalls, type Block, type Turn } from '../core/turns.js';
import { endWith, type LoopPorts, type LoopState, type RunContext } from '../operators/loop-state.js';
import { eventFrom, type EventOrigin, type RunStatus } from '../streams/events.js';

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
 * One run as a cold Observable through `loop` (the runtime's one tool loop, shared by every run):
 * publishes `run-started` (unless `resumed`: a run re-entered after a restart started before it), runs
 * the tool loop from `initial` until it ends or `cancel$` emits, publishes `run-ended`, emits the result
 * and completes. `onProgress` sees the turn after each phase, so a cancelled run still keeps what it had.
 */
export function createRun$(
  ports: LoopPorts,
  loop: OperatorFunction<LoopState, LoopState>,
  initial: LoopState,
  cancel$: Observable<unknown>,
  onProgress: (blocks: readonly Block[]) => void,
  resumed = false,
): Observable<RunResult> {
  const { run } = initial;
  // One hand-written observer instead of catchError/reduce/map: a run lives as long as its pauses,
  // and those three layers took the heap each paused run holds past its target. Cancellation is
  // unsubscription, here rather than through an operator of its own: a `cancelOn` layer (Observable,
  // notifier and forwarding subscribers), tried again later, took it past the target as well, so it
  // was deleted. `takeUntil` would not do: it completes downstream before it unsubscribes
  // upstream, so what the teardown publishes would follow the run's end. The order here: the loop is
  // torn down first (aborting the engine call and the tools, resolving an open pause as
  // `cancelled`), then the run ends, so `resumed` precedes `run-ended` (session.test.ts).
  return new Observable<RunResult>((subscriber) => {
    let latest = initial;
    let loop$: Subscription | undefined;
    const end = (final: LoopState): void => {
      subscriber.next(ended(ports, run, final));
      subscriber.complete();
    };
    const cancelled = cancel$.subscribe(() => {
      // Read only once set: a notifier that fires during its own subscribe finds nothing to tear down.
      loop$?.unsubscribe();
      end(latest);
    });
    // Cancelled during subscribe: the loop never starts.
    if (subscriber.closed) return cancelled;
    if (!resumed) ports.publish(eventFrom('run-started', run, ports.scheduler.now(), {}));
    loop$ = of(initial)
      .pipe(loop)
      .subscribe({
        // Every phase's state: a cancelled run keeps the turn as it stood.
        next: (state) => {
          latest = state;
          onProgress(state.blocks);
        },
        complete: () => end(latest),
        // Only a bug gets here (engine and tool failures are values): the run still ends, as failed,
        // with its run-ended event, so no dashboard waits on it forever.
        error: (error: unknown) =>
          end(endWith(latest, { status: 'failed', error: `internal error: ${error instanceof Error ? error.message : String(error)}` })),
      });
    subscriber.add(cancelled);
    return loop$;
  });
}

/**
 * A run cancelled where it stands at `state` without its loop running (restored at a pause, cancelled
 * before the pause resolved): publishes `run-ended` as cancelled and builds the result, as `createRun$` would.
 */
export const cancelledAt = (ports: LoopPorts, state: LoopState): RunResult => ended(ports, state.run, state);

/**
 * A run that ends `failed` where it stands without its loop (one that could not be restored from the
 * store, docs/protocol.md, Durability): publishes `run-ended` and builds the result, its turn `blocks`.
 */
export const failedAt = (ports: Pick<LoopPorts, 'publish' | 'scheduler'>, run: EventOrigin, blocks: readonly Block[], error: string): RunResult =>
  ended(ports, run, { blocks, outcome: { status: 'failed', error } });

/** Publishes `run-ended` and builds the result; no outcome means the loop was cut short by cancellation. */
function ended(ports: Pick<LoopPorts, 'publish' | 'scheduler'>, run: EventOrigin & Pick<RunContext, 'usage'>, final: Pick<LoopState, 'blocks' | 'outcome'>): RunResult {
  const outcome = final.outcome ?? { status: 'cancelled' as const };
  const error = outcome.error === undefined ? {} : { error: outcome.error };
  const usage = run.usage ? { usage: { input_tokens: run.usage.input_tokens, output_tokens: run.usage.output_tokens } } : {};
  ports.publish(eventFrom('run-ended', run, ports.scheduler.now(), { status: outcome.status, ...error, ...usage }));
  return {
    conv_id: run.conv_id,
    session_id: run.session_id,
    inference_id: run.inference_id,
    turn_id: run.turn_id,
    status: outcome.status,
    ...error,
    turn: { id: run.turn_id, blocks: closeDanglingCalls(final.blocks, outcome.status) },
  };
}

/**
 * A run that ends with calls still unanswered (cancelled, aborted) answers them with an error, so the
 * history stays a valid transcript: providers refuse a tool call without its result.
 */
function closeDanglingCalls(blocks: readonly Block[], status: RunStatus): readonly Block[] {
  const dangling = pendingToolCalls(blocks);
  if (dangling.length === 0) return blocks;
  const closing = dangling.map(
    (call): Block => ({
      id: `${call.id}:use`,
      kind: 'tool_use',
      role: 'tool',
      payload: { id: call.id, result: null, error: `not run: the run ended (${status}) before this call ran` },
    }),
  );
  return [...blocks, ...closing];
}
