import { defer, finalize, share, Subject, tap, type Observable, type Subscription } from 'rxjs';
import type { FrameEvent, Store, StoredFrame, WireFrame } from '../core/store.js';
import type { EventHub } from '../streams/event-hub.js';
import { convOfFrame, type LogFrame } from '../streams/frame-codec.js';
import type { FrameLog, LogPage } from '../streams/frame-log.js';

/**
 * A conversation's committed frames after a seq, appended by any instance (the Redis store's `tail$`): the
 * runtime's as their wire text, which goes on to clients as it is (never parsed here).
 */
export type FrameTail$ = (convId: string, sinceSeq: number) => Observable<StoredFrame | WireFrame>;

/**
 * The frame log clients read on one instance of a service (docs/protocol.md, Several instances): a conversation's live frames come
 * from the store's tail (one shared tail per conversation on this instance, whoever runs it: the
 * instance that runs a conversation now, or one that took it over, all append to the same stream), so a client
 * gets every frame once and in seq order wherever the run executes. Replay is the local log's, which
 * reads the store when its buffer does not hold the frames asked for. The hub is told the seqs seen,
 * so a run this instance starts later goes on after them.
 */
/** The service's frame log on this instance, and every frame it relays (its own and, through the tail, other instances'). */
export interface ServiceFrameLog extends FrameLog<LogFrame> {
  readonly relayed$: Observable<LogFrame>;
}

export function createServiceFrames(local: FrameLog<LogFrame>, hub: EventHub, store: Pick<Store<FrameEvent, WireFrame>, 'frames'>, tail$: FrameTail$): ServiceFrameLog {
  // Per conversation, the newest seq `events$` has carried: each frame reaches the encoder once,
  // from the local log or from the tail, whichever is first.
  const seen = new Map<string, number>();
  const events$ = new Subject<LogFrame>();
  const announce = (convId: string, frame: LogFrame): void => {
    if (frame.seq <= (seen.get(convId) ?? 0)) return;
    seen.set(convId, frame.seq);
    if (frame.seq > hub.lastSeq(convId)) hub.seed(convId, frame.seq);
    events$.next(frame);
  };
  const localFrames: Subscription = local.events$.subscribe((frame) => announce(convOfFrame(frame), frame));

  const buffered = (convId: string, sinceSeq: number, limit = Number.POSITIVE_INFINITY): LogPage<LogFrame> | undefined =>
    wholePage(local.buffered(convId, sinceSeq, limit), sinceSeq, limit);

  const tails = createSharedTails(tail$, local, announce);

  return {
    events$: local.events$,
    relayed$: events$.asObservable(),
    conversation$: tails.tail$,
    lastSeq: (convId) => local.lastSeq(convId),
    isWatched: (convId) => tails.isTailed(convId) || local.isWatched(convId),
    buffered,
    read: async (convId, sinceSeq, limit = Number.POSITIVE_INFINITY) =>
      buffered(convId, sinceSeq, limit) ?? storedPage(store, convId, sinceSeq, limit, local.lastSeq(convId)),
    forget: (convId) => {
      seen.delete(convId);
      local.forget(convId);
    },
    dispose: () => {
      localFrames.unsubscribe();
      local.dispose();
      events$.complete();
    },
  };
}

/**
 * One tail per conversation on this instance, shared by its clients while any follows it: a tail holds
 * a connection of its own, so clients of one conversation must not open one each.
 */
function createSharedTails(
  tail$: FrameTail$,
  local: FrameLog<LogFrame>,
  announce: (convId: string, frame: LogFrame) => void,
): { tail$(convId: string): Observable<LogFrame>; isTailed(convId: string): boolean } {
  const tails = new Map<string, Observable<LogFrame>>();
  const tailOf = (convId: string): Observable<LogFrame> =>
    // From what is committed when the first client joins: the forwarder replays what came before.
    defer(() => tail$(convId, local.lastSeq(convId)) as Observable<LogFrame>).pipe(
      tap((frame) => announce(convId, frame)),
      finalize(() => tails.delete(convId)),
      share(),
    );
  return {
    tail$: (convId) => {
      let channel = tails.get(convId);
      if (!channel) tails.set(convId, (channel = tailOf(convId)));
      return channel;
    },
    isTailed: (convId) => tails.has(convId),
  };
}

/**
 * The local page, only when it holds every frame asked for. The hub's buffer may stop short of a seq it
 * was told of (frames another instance appended): such a page has a gap, and the store has them.
 */
function wholePage(found: LogPage<LogFrame> | undefined, sinceSeq: number, limit: number): LogPage<LogFrame> | undefined {
  if (!found) return undefined;
  const wanted = Math.min(limit, found.lastSeq - sinceSeq);
  if (wanted <= 0) return found;
  return found.frames.length === wanted && found.frames.at(-1)?.seq === sinceSeq + wanted ? found : undefined;
}

/** The page from the store, cut at `last` (what this instance has announced), so it never runs ahead of the live frames. */
async function storedPage(
  store: Pick<Store<FrameEvent, WireFrame>, 'frames'>,
  convId: string,
  sinceSeq: number,
  limit: number,
  last: number,
): Promise<LogPage<LogFrame>> {
  const page = await store.frames(convId, { since_seq: sinceSeq, ...(Number.isFinite(limit) ? { limit } : {}) });
  return { frames: page.frames.filter((frame) => frame.seq <= last) as LogFrame[], lastSeq: last };
}
