import type { Observable, Subscription } from 'rxjs';
import { Subject } from 'rxjs';
import type { FrameEvent, Store, WireFrame } from '../core/store.js';
import { LeaseLostError, StoreClosedError, StoreSequenceError } from '../core/store-errors.js';
import { createCommitQueue } from './commit-queue.js';
import { createLiveChannels, type EventHub } from './event-hub.js';
import type { SequencedEvent } from './events.js';
import { createFrameCodec, type LogFrame } from './frame-codec.js';

export interface FrameLogConfig {
  /** Told about each frame the store could not commit (that frame is never delivered). Default: ignored. */
  readonly onError?: (error: unknown) => void;
}

/** Committed frames with seq > some seq, oldest first, and the newest committed seq. */
export interface LogPage<F extends LogFrame = LogFrame> {
  readonly frames: readonly F[];
  readonly lastSeq: number;
}

/**
 * What clients may see of the hub (docs/protocol.md, Durability: a frame is committed to the store before any client
 * receives it): each frame once the store has committed it, in hub order, and the frames of before
 * from the hub's buffer or, when it no longer holds them (trimmed, or after a restart), the store's log.
 */
export interface FrameLog<F extends LogFrame = SequencedEvent> {
  /** Every committed frame of this runtime's hub, in hub order. Hot: connected from creation until `dispose`. */
  readonly events$: Observable<SequencedEvent>;
  /**
   * One conversation's committed frames, live: `F` is the hub's items here, and also frames of other
   * instances as their wire text alone on one instance of a service (src/service/service-frames.ts).
   */
  conversation$(convId: string): Observable<F>;
  /** The newest committed seq: what `ws.hello` and `/hydrate` call `last_seq`. */
  lastSeq(convId: string): number;
  /** Whether a live subscriber (a dashboard's socket) follows the conversation now. */
  isWatched(convId: string): boolean;
  /**
   * Committed frames with seq > `sinceSeq`, oldest first, at most `limit`, when the hub's buffer still
   * holds every one of them; undefined when some are only in the store (see `read`).
   */
  buffered(convId: string, sinceSeq: number, limit?: number): LogPage<F> | undefined;
  /** As `buffered`, falling back to the store's log (whose frames may be their wire text alone). */
  read(convId: string, sinceSeq: number, limit?: number): Promise<LogPage>;
  /** Drops what it knows of a conversation (when the conversation is closed). */
  forget(convId: string): void;
  /** Stops delivering. Idempotent. Frames already queued in the store are still committed. */
  dispose(): void;
}

/**
 * hub -> store -> clients, built once per runtime: every frame is appended to the store as the hub
 * delivers it (batched by the store: SQLite commits a tick's frames in one transaction; the memory
 * store at once, so the hub's timing is unchanged), and delivered here once committed. A durable
 * store is given each frame with its wire text, made here once (frame-codec.ts); the memory store
 * keeps the items, whose text the server makes when a client first needs it.
 */
export function createFrameLog(hub: EventHub, store: Store<FrameEvent, WireFrame>, config: FrameLogConfig = {}): FrameLog {
  const channels = createLiveChannels<SequencedEvent>();
  const events$ = new Subject<SequencedEvent>();
  const codec = store.durable ? createFrameCodec() : undefined;
  // Per conversation whose append failed, the last seq committed before it: what is committed of a
  // conversation ends before its first frame that failed or still waits for its commit.
  const stalled = new Map<string, number>();
  const deliver = (frame: SequencedEvent): void => {
    // The one place committed frames enter: a per-conversation route, so the fan-out to one
    // conversation's clients does not filter every conversation's frames (as the hub does).
    // Often nobody follows every conversation at once (a library user, a server that is no instance of a service):
    // rxjs' ES5 build, which Node loads, spends a closure and an iterator per `next` even then.
    if (events$.observed) events$.next(frame);
    channels.next(frame.event.conv_id, frame);
  };
  const commits = createCommitQueue(store, { committed: deliver, failed: refusedBy(hub, stalled, config) });
  const lastSeq = (convId: string): number => {
    const failedAfter = stalled.get(convId);
    if (failedAfter !== undefined) return failedAfter;
    const waiting = commits.firstWaiting(convId);
    return waiting ? waiting.seq - 1 : hub.lastSeq(convId);
  };
  const connection: Subscription = hub.events$.subscribe((frame) => {
    codec?.textOf(frame);
    commits.push(frame);
  });

  const buffered = (convId: string, sinceSeq: number, limit = Number.POSITIVE_INFINITY): LogPage<SequencedEvent> | undefined =>
    bufferedFrom(hub, lastSeq(convId), convId, sinceSeq, limit);

  let disposed = false;
  return {
    events$: events$.asObservable(),
    conversation$: (convId) => channels.channel$(convId),
    lastSeq,
    isWatched: (convId) => channels.isWatched(convId),
    buffered,
    read: (convId, sinceSeq, limit = Number.POSITIVE_INFINITY) =>
      Promise.resolve(buffered(convId, sinceSeq, limit) ?? fromStore(store, lastSeq, convId, sinceSeq, limit)),
    forget: (convId) => {
      stalled.delete(convId);
    },
    dispose: () => {
      if (disposed) return;
      disposed = true;
      connection.unsubscribe();
      commits.close();
    },
  };
}

/** What a frame the store did not commit does to its conversation's log. */
function refusedBy(hub: EventHub, stalled: Map<string, number>, config: FrameLogConfig): (error: unknown, frame: SequencedEvent) => void {
  return (error, frame) => {
    const convId = frame.event.conv_id;
    config.onError?.(error);
    if (error instanceof LeaseLostError || error instanceof StoreClosedError || error instanceof StoreSequenceError) {
      // No more of this conversation is written here (another instance wrote its log, or runs it now):
      // what clients are told of ends before the missing frame.
      if (!stalled.has(convId)) stalled.set(convId, frame.seq - 1);
      return;
    }
    // The store refused the frame (and its conversation's other writes of that batch): the hub takes
    // it back, so the next frame takes its seq and the conversation goes on being written, gapless.
    if (frame.seq - 1 < hub.lastSeq(convId)) hub.rewind(convId, frame.seq - 1);
  };
}

/** Committed frames up to `last` from the hub's buffer, when it holds every one of them after `sinceSeq`. */
function bufferedFrom(hub: EventHub, last: number, convId: string, sinceSeq: number, limit: number): LogPage<SequencedEvent> | undefined {
  const wanted = Math.min(limit, last - sinceSeq);
  if (wanted <= 0) return { frames: [], lastSeq: last };
  const { frames } = hub.buffered(convId, sinceSeq, wanted);
  // The buffer is consecutive seqs: it holds them all when it starts right after `sinceSeq`.
  return frames[0]?.seq === sinceSeq + 1 ? { frames, lastSeq: last } : undefined;
}

/** Committed frames from the store's log (their wire text alone, when stored so), when the hub's buffer no longer holds them. */
async function fromStore(store: Store<FrameEvent, WireFrame>, lastSeq: (convId: string) => number, convId: string, sinceSeq: number, limit: number): Promise<LogPage> {
  const page = await store.frames(convId, { since_seq: sinceSeq, ...(Number.isFinite(limit) ? { limit } : {}) });
  // What `last_seq` says is committed and delivered; the store may be a few frames ahead of it.
  const last = lastSeq(convId);
  const frames = page.frames.filter((frame) => frame.seq <= last) as LogFrame[];
  return { frames, lastSeq: last };
}
