import { Observable, of, type OperatorFunction, type Subscription } from 'rxjs';
import { pendingToolCalls, type Block, type Turn } from '../core/turns.js';
import { endWith, type LoopPorts, type LoopState, type RunContext } from '../operators/loop-state.js';
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
 * One run as a cold Observable through `loop` (the runtime's one tool loop, shared by every run): publishes `run-started`, runs the tool loop until it ends or
 * `run.cancel$` emits, publishes `run-ended`, emits the result and completes.
 * `onProgress` sees the turn after each phase, so a cancelled run still keeps what it had.
 */
export function createRun$(
  ports: LoopPorts,
  loop: OperatorFunction<LoopState, LoopState>,
  run: RunContext,
  userBlock: Block,
  onProgress: (blocks: readonly Block[]) => void,
): Observable<RunResult> {
  // One hand-written subscriber instead of tap/catchError/last/map: a run lives as long as its
  // pauses, and every layer it holds costs memory for each paused run.
  return new Observable<RunResult>((subscriber) => {
    const initial: LoopState = { run, blocks: [userBlock], iteration: 0 };
    let latest = initial;
    let ended = false;
    const end = (final: LoopState): void => {
      if (ended) return;
      ended = true;
      // No outcome means the loop was cut short by cancel$.
      const outcome = final.outcome ?? { status: 'cancelled' as const };
      const error = outcome.error === undefined ? {} : { error: outcome.error };
      ports.publish(createEvent('run-ended', run, ports.scheduler.now(), { status: outcome.status, ...error }));
      subscriber.next({
        conv_id: run.conv_id,
        session_id: run.session_id,
        inference_id: run.inference_id,
        turn_id: run.turn_id,
        status: outcome.status,
        ...error,
        turn: { id: run.turn_id, blocks: closeDanglingCalls(final.blocks, outcome.status) },
      });
      subscriber.complete();
    };
    ports.publish(createEvent('run-started', run, ports.scheduler.now(), {}));
    let loopSubscription: Subscription | undefined;
    // Cancellation is unsubscription: the loop is torn down first (aborting the engine call and the
    // tools, resolving an open pause as `cancelled`), then the run ends, so `resumed` precedes `run-ended`.
    const cancelSubscription = run.cancel$.subscribe(() => {
      loopSubscription?.unsubscribe();
      end(latest);
    });
    loopSubscription = of(initial)
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
    return () => {
      cancelSubscription.unsubscribe();
      loopSubscription?.unsubscribe();
    };
  });
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
