import { AsyncSubject, concat, defer, filter, firstValueFrom, from, map, takeWhile, type Observable } from 'rxjs';
import type { Turn } from '../core/turns.js';
import type { EventHub } from '../streams/event-hub.js';
import type { PauseInfo, SequencedEvent, StepwiseEvent } from '../streams/events.js';
import type { StepController } from '../streams/step-controller.js';
import type { RunResult as LoopRunResult } from './run.js';

/** How a run ended, with its turn, its final text and its status. */
export interface RunResult extends LoopRunResult {
  /** The turn's last `llm_text` (the model's final answer); '' when it gave none. */
  readonly text: string;
}

/** One run as its starter sees it: ids, result, and its own slice of the event hub. */
export interface RunHandle {
  readonly inference_id: string;
  readonly turn_id: string;
  /** The result, also for late subscribers (one value, kept after completion). */
  readonly result$: Observable<RunResult>;
  /** The result as a Promise; it rejects only on an internal bug (failures are a `status`). */
  result(): Promise<RunResult>;
  /**
   * This run's events and its child runs' (agent tools), in hub order: replayed from the run's start (as far as the
   * conversation's buffer reaches), then live; completes after its own `run-ended`. Cold: each subscriber gets its own replay.
   */
  readonly events$: Observable<SequencedEvent>;
  /**
   * This run's pauses, its child runs' included, that are still open when the subscriber learns of them (a pause
   * already resolved before a late subscription is skipped); completes when the run ends.
   */
  readonly pauses$: Observable<PauseInfo>;
  /** The run's next open pause; `undefined` when the run ends without pausing again. */
  nextPause(): Promise<PauseInfo | undefined>;
}

/** What a handle reads its views from. */
export interface RunViews {
  readonly hub: EventHub;
  readonly controller: StepController;
}

type PausedEvent = Extract<StepwiseEvent, { type: 'paused' }>;
const isPaused = (frame: SequencedEvent): frame is SequencedEvent & { event: PausedEvent } => frame.event.type === 'paused';

/** The final answer of a turn: its last `llm_text`. */
export function finalTextOf(turn: Turn): string {
  for (let i = turn.blocks.length - 1; i >= 0; i -= 1) {
    const block = turn.blocks[i];
    if (block?.kind === 'llm_text') return block.payload.text;
  }
  return '';
}

/**
 * A class, and views built only when asked for: a server holds one handle per paused run, so an
 * unused `events$` must cost nothing.
 */
export class LoopRunHandle implements RunHandle {
  // Made when someone asks for the result, or the run ends with it settled: a paused or hibernated run's
  // starter that never asks (most of a server's) costs no Subject while the run waits. Declared, so a
  // handle carries the slots only once it has them.
  declare private outcome?: AsyncSubject<RunResult>;
  /** Set once the run is over. */
  declare private ending?: Ending;

  constructor(
    readonly inference_id: string,
    readonly turn_id: string,
    private readonly conv_id: string,
    /** The conversation's last seq before the run began: its events all come after. */
    private readonly sinceSeq: number,
    private readonly views: RunViews,
  ) {}

  get result$(): Observable<RunResult> {
    return this.subject().asObservable();
  }

  result(): Promise<RunResult> {
    return firstValueFrom(this.subject());
  }

  get events$(): Observable<SequencedEvent> {
    const { hub } = this.views;
    // Once the run is over its `run-ended` is already buffered (or the conversation was closed):
    // a snapshot then, so a late subscriber completes instead of waiting on a live stream forever.
    return defer(() => {
      // The run's own events and its child runs', at any depth (docs/protocol.md, Agents inside agents): a child
      // starts after its parent, so its parent is known by then.
      const tree = new Set([this.inference_id]);
      const frames$ = this.ending ? from(hub.buffered(this.conv_id, this.sinceSeq).frames) : hub.replay$(this.conv_id, this.sinceSeq);
      return frames$.pipe(
        filter(({ event }) => {
          if (event.type === 'run-started' && event.parent !== undefined && tree.has(event.parent.inference_id)) tree.add(event.inference_id);
          return tree.has(event.inference_id);
        }),
        takeWhile(({ event }) => !(event.type === 'run-ended' && event.inference_id === this.inference_id), true),
      );
    });
  }

  get pauses$(): Observable<PauseInfo> {
    const { controller } = this.views;
    return defer(() => {
      // The run's open pause from the controller first: a hibernated run's `paused` frame may have left
      // the conversation's buffer (docs/protocol.md, Durability), and its pause is still open.
      const open = this.ending ? [] : controller.pending().filter((pause) => (pause.path?.[0]?.inference_id ?? pause.inference_id) === this.inference_id);
      const known = new Set(open.map((pause) => pause.pause_id));
      const later = this.events$.pipe(
        filter(isPaused),
        map((frame) => frame.event.pause),
        filter((pause) => !known.has(pause.pause_id) && controller.get(pause.pause_id) !== undefined),
      );
      return concat(from(open), later);
    });
  }

  nextPause(): Promise<PauseInfo | undefined> {
    return firstValueFrom(this.pauses$, { defaultValue: undefined });
  }

  /** Called by the session, once, after the run's `run-ended` was published. */
  settle(result: LoopRunResult): RunResult {
    const withText: RunResult = { ...result, text: finalTextOf(result.turn) };
    this.ending = { result: withText };
    if (this.outcome) end(this.outcome, this.ending);
    return withText;
  }

  /** Only a programmer bug gets here. */
  fail(error: unknown): void {
    this.ending = { error };
    if (this.outcome) end(this.outcome, this.ending);
  }

  private subject(): AsyncSubject<RunResult> {
    if (this.outcome) return this.outcome;
    const outcome = (this.outcome = new AsyncSubject<RunResult>());
    if (this.ending) end(outcome, this.ending);
    return outcome;
  }
}

/** How a run's handle was settled: its result, or (a bug) an error. */
type Ending = { readonly result: RunResult } | { readonly error: unknown };

function end(outcome: AsyncSubject<RunResult>, ending: Ending): void {
  if ('error' in ending) return outcome.error(ending.error);
  outcome.next(ending.result);
  outcome.complete();
}
