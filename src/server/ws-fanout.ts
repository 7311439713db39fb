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
 * buffer, in one write. Written first as `ws.send` per frame and client (socket corked per turn), it sent
 * to one client slower than the raw `ws` server and gained less from many; one buffer per turn does better at
 * every fan-out, about as well as a hand-framed path. What is left for one client is JSON.stringify, as the
 * raw server's: none at all for a frame a durable store was given with its text (src/streams/frame-codec.ts).
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
