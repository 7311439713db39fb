import { filter, map, skipWhile, takeWhile, type Observable, type OperatorFunction } from 'rxjs';
import type { StepwiseEvent } from '../../streams/events.js';
import type { FrameLog } from '../../streams/frame-log.js';
import type { LogFrame } from '../../streams/frame-codec.js';
import { replayThenLive$ } from '../../streams/replay-then-live.js';
import { eventOfWireText } from '../../streams/sem-decode.js';

/**
 * A conversation's committed events after `sinceSeq`, with no gap and no duplicate: the frames of
 * before come from the log (its buffer or the store), then the live ones, as a WebSocket client gets
 * them (docs/protocol.md, WebSocket). Live frames wait while the frames of before are read. Only
 * committed frames, so a view never tells a client of a frame a crash could still lose
 * (docs/protocol.md, Durability). On an instance of a service the live frames of a run another
 * instance runs come from the store's tail (docs/protocol.md, Several instances).
 *
 * Never completes by itself; errors when the frames of before cannot be read.
 */
export function committedEvents$(frames: FrameLog<LogFrame>, convId: string, sinceSeq: number): Observable<StepwiseEvent> {
  const read = (): Promise<readonly LogFrame[]> => frames.read(convId, sinceSeq).then((page) => page.frames);
  return replayThenLive$(frames.conversation$(convId), read, sinceSeq).pipe(
    // Another instance's frame comes as its wire text alone: read back into its event.
    map((frame) => frame.event ?? eventOfWireText(convId, frame.text)),
    filter((event): event is StepwiseEvent => event !== undefined),
  );
}

/**
 * A run's segment ends at its next pause (it waits there), a child run's included, or at its end; a child run's
 * end is a step inside it (docs/protocol.md, Agents inside agents).
 */
export const isSegmentEnd = (event: StepwiseEvent): boolean => event.type === 'paused' || (event.type === 'run-ended' && event.depth === undefined);

/**
 * One segment of a run, as the AG-UI and AI SDK views stream it: from the event that `startsAt`
 * (the run's `run-started`, or the `resumed` of the pause a view just answered) to the next pause or
 * the run's end, both included, then complete.
 *
 * ```
 * conversation:  --log--run-started--text-delta--paused--resumed--...
 * segment$:      -------run-started--text-delta--paused|
 * ```
 */
export function segmentOf(startsAt: (event: StepwiseEvent) => boolean): OperatorFunction<StepwiseEvent, StepwiseEvent> {
  return (events$) =>
    events$.pipe(
      skipWhile((event) => !startsAt(event)),
      takeWhile((event) => !isSegmentEnd(event), true),
    );
}

/** The segment of a run that starts with its `run-started` (read from `sinceSeq`, taken before it started). */
export const startedRun$ = (frames: FrameLog<LogFrame>, convId: string, sinceSeq: number, inferenceId: string): Observable<StepwiseEvent> =>
  committedEvents$(frames, convId, sinceSeq).pipe(segmentOf((event) => event.type === 'run-started' && event.inference_id === inferenceId));

/** The segment of a run that starts where `pauseId` was resolved (read from `sinceSeq`, taken before the decision). */
export const resumedRun$ = (frames: FrameLog<LogFrame>, convId: string, sinceSeq: number, pauseId: string): Observable<StepwiseEvent> =>
  committedEvents$(frames, convId, sinceSeq).pipe(segmentOf((event) => event.type === 'resumed' && event.pause_id === pauseId));
