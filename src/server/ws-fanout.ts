import { asapScheduler, auditTime, buffer, connect, filter, finalize, map, merge, share, Subject, type Observable } from 'rxjs';
import type { LogFrame } from '../streams/frame-codec.js';
import type { FrameLog } from '../streams/frame-log.js';
import type { FrameEncoder } from './frame-encoder.js';
import { createFrameHeaders, createFrameList, type FrameHeaders, type FrameList } from './ws-frame.js';

/** A conversation's frames of one turn, each encoded once, back to back for all its clients. */
export interface Batch {
  /** The seq of its first frame; the others follow one by one. */
  readonly first: number;
  readonly frames: FrameList;
}

export interface Fanout {
  /** A conversation's live batches: one pipeline shared by its clients, connected while it has any. */
  batches$(convId: string): Observable<Batch>;
  /** Ends every batch now (e.g. before the clients are closed), instead of at the end of the turn. */
  flush(): void;
  /** Frames back to back (a replayed backlog), framed as the batches are. */
  framesOf(items: readonly LogFrame[]): FrameList;
}

/**
 * committed frames -> encode -> fan-out, once per conversation: each client gets each turn's frames as one shared
 * buffer, in one write. Written first as `ws.send` per frame and client (socket corked per turn), the
 * bench measured fanout_1 / 10 / 100 at 0.55-0.75× / 1.5-2.6× / 2.8-4.4× the raw `ws` server; one
 * buffer per turn gave 0.86-0.93× / 3.9-5.2× / 5.3-5.5× (main's hand-framed path: 0.81× / 4.2× / 6.2×
 * in the same conditions). What is left of fanout_1 is JSON.stringify, as the raw server's: none at all
 * for a frame a durable store was given with its text (src/streams/frame-codec.ts).
 */
export function createFanout(frames: Pick<FrameLog<LogFrame>, 'conversation$'>, encoder: FrameEncoder): Fanout {
  const channels = new Map<string, Observable<Batch>>();
  const flush$ = new Subject<void>();
  const headers = createFrameHeaders();
  const encode = (items: readonly LogFrame[]): FrameList => framesOf(items, encoder, headers);

  const channel = (convId: string): Observable<Batch> =>
    frames.conversation$(convId).pipe(
      // A turn ends at the first microtask checkpoint after its first frame: what a run publishes in
      // one go is one batch, and a lone frame (a resume) waits for nothing else.
      connect((items$) => items$.pipe(buffer(merge(items$.pipe(auditTime(0, asapScheduler)), flush$)))),
      filter((items) => items.length > 0),
      map((items): Batch => ({ first: (items[0] as LogFrame).seq, frames: encode(items) })),
      finalize(() => channels.delete(convId)),
      share(),
    );

  return {
    batches$: (convId) => {
      let batches$ = channels.get(convId);
      if (!batches$) channels.set(convId, (batches$ = channel(convId)));
      return batches$;
    },
    flush: () => flush$.next(),
    framesOf: encode,
  };
}

/** Frames back to back, each with the text it was stored with (or made once now, and kept). */
function framesOf(items: readonly LogFrame[], encoder: FrameEncoder, headers: FrameHeaders): FrameList {
  const frames = createFrameList(headers);
  for (const item of items) frames.append(encoder.textOf(item));
  return frames;
}
