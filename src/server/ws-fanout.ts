import { asapScheduler, auditTime, buffer, connect, filter, finalize, map, merge, share, Subject, type Observable } from 'rxjs';
import type { EventHub } from '../streams/event-hub.js';
import type { SequencedEvent } from '../streams/events.js';
import type { FrameEncoder } from './frame-encoder.js';
import { createFrameList, type FrameList } from './ws-frame.js';

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
}

/**
 * hub -> encode -> fan-out, once per conversation: each client gets each turn's frames as one shared
 * buffer. Sending every frame to every client (`ws.send` per frame and client) measured fanout_1 at
 * 0.55-0.75× the raw `ws` server; one buffer per turn is what brings it over 1× (see bench/wire.ts).
 */
export function createFanout(hub: EventHub, encoder: FrameEncoder): Fanout {
  const channels = new Map<string, Observable<Batch>>();
  const flush$ = new Subject<void>();

  const channel = (convId: string): Observable<Batch> =>
    hub.conversation$(convId).pipe(
      // A turn ends at the first microtask checkpoint after its first frame: what a run publishes in
      // one go is one batch, and a lone frame (a resume) waits for nothing else.
      connect((items$) => items$.pipe(buffer(merge(items$.pipe(auditTime(0, asapScheduler)), flush$)))),
      filter((items) => items.length > 0),
      map((items): Batch => ({ first: (items[0] as SequencedEvent).seq, frames: framesOf(items, encoder) })),
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
  };
}

/** Hub items' frames back to back. */
export function framesOf(items: readonly SequencedEvent[], encoder: FrameEncoder): FrameList {
  const frames = createFrameList();
  for (const item of items) frames.append(encoder.encode(item).text);
  return frames;
}
