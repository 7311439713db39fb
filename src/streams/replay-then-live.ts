import { Observable } from 'rxjs';

/** Anything numbered in its conversation's log. */
export interface Sequenced {
  readonly seq: number;
}

/**
 * The frames after `sinceSeq` that `before` gives (a buffer read at once, or a log read from the store),
 * then `live$` from where they end: no gap, no duplicate. A late subscriber (a WebSocket, a run's view,
 * a `replay$`) gets every frame once, in seq order.
 *
 * ```
 * before:   (1 2 3)
 * live$:    ---3--4--5--
 * result:   (1 2 3)-4--5--
 * ```
 *
 * `live$` is subscribed first and what it says is held back while the frames of before are sent, then
 * sent unless they already covered it, so nothing published in between is lost or doubled. Frames read
 * at once are sent synchronously, during the subscription. Errors when `live$` does or when the frames of
 * before cannot be read; completes when `live$` does, after the frames of before. Unsubscribing
 * unsubscribes `live$` (a read under way is let go: what it brings is not sent).
 */
export function replayThenLive$<F extends Sequenced>(live$: Observable<F>, before: () => readonly F[] | PromiseLike<readonly F[]>, sinceSeq: number): Observable<F> {
  return new Observable<F>((subscriber) => {
    let sent = sinceSeq;
    let held: F[] | undefined = [];
    let liveEnded = false;
    const send = (frame: F): void => {
      if (frame.seq <= sent) return;
      sent = frame.seq;
      subscriber.next(frame);
    };
    const release = (frames: readonly F[]): void => {
      if (subscriber.closed) return;
      for (const frame of frames) send(frame);
      const waiting = held ?? [];
      held = undefined;
      for (const frame of waiting) send(frame);
      if (liveEnded) subscriber.complete();
    };
    const live = live$.subscribe({
      next: (frame) => (held ? held.push(frame) : send(frame)),
      error: (error: unknown) => subscriber.error(error),
      complete: () => (held ? (liveEnded = true) : subscriber.complete()),
    });
    const frames = before();
    if (isPromiseLike(frames)) frames.then(release, (error: unknown) => subscriber.error(error));
    else release(frames);
    return live;
  });
}

const isPromiseLike = <T>(value: T | PromiseLike<T>): value is PromiseLike<T> => typeof (value as Partial<PromiseLike<T>>).then === 'function';
