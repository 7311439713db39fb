import { Observable, Subject } from 'rxjs';
import type { SequencedEvent, StepwiseEvent } from './events.js';
import { replayThenLive$ } from './replay-then-live.js';

export interface EventHubConfig {
  /** Frames kept per conversation for replay (`since_seq`, `/hydrate`). Default 1000. */
  readonly bufferSize?: number;
  /**
   * The last seq of a conversation the hub holds nothing of (a durable store's, docs/protocol.md,
   * Durability), so a conversation whose buffer was let go (a hibernated run's) needs no entry here to
   * go on from it. Default: 0, the hub alone knows seqs.
   */
  readonly lastSeqOf?: (convId: string) => number;
}

export const DEFAULT_BUFFER_SIZE = 1000;
const DEFAULT_HUB_CONFIG = Object.freeze({ bufferSize: DEFAULT_BUFFER_SIZE });

/** What a late subscriber can still get: frames after `since` and the newest seq. */
export interface BufferedFrames {
  readonly frames: readonly SequencedEvent[];
  readonly lastSeq: number;
}

/**
 * The one hot stream of every session's events. Its Subject is private; producers call
 * `publish`, consumers subscribe to `events$` or to a derived per-conversation view.
 */
export interface EventHub {
  /** Stamps the next seq of the event's conversation, buffers it and delivers it to every subscriber. */
  publish(event: StepwiseEvent): SequencedEvent;
  readonly events$: Observable<SequencedEvent>;
  /** Live events of one conversation. */
  conversation$(convId: string): Observable<SequencedEvent>;
  /** Buffered events with seq > sinceSeq, then live ones: no gap, no duplicate. */
  replay$(convId: string, sinceSeq: number): Observable<SequencedEvent>;
  /** A snapshot of the buffer after `sinceSeq`, at most `limit` frames (oldest first). */
  buffered(convId: string, sinceSeq?: number, limit?: number): BufferedFrames;
  lastSeq(convId: string): number;
  /** Whether a live subscriber (`conversation$`, `replay$`: a dashboard's socket) follows the conversation now. */
  isWatched(convId: string): boolean;
  /** Drops a conversation's buffer and sequence (when the conversation is deleted). */
  forget(convId: string): void;
  // Durable runs (docs/protocol.md, Durability): seq goes on from the stored log after a restart.
  /** Sets a conversation's last seq (from the store) before its first publish: the next frame gets `lastSeq + 1`. */
  seed(convId: string, lastSeq: number): void;
  /**
   * Takes back the frames after `lastSeq`, which the store did not commit (docs/protocol.md, A 200 means
   * committed): they leave the buffer, and the next frame gets `lastSeq + 1`, so the log goes on with no gap.
   */
  rewind(convId: string, lastSeq: number): void;
}

interface ConversationLog {
  seq: number;
  frames: SequencedEvent[];
}

/** Live values by key, each key's Subject existing only while someone observes it. */
export interface LiveChannels<T> {
  channel$(key: string): Observable<T>;
  /** Delivers to the key's observers, if any. */
  next(key: string, value: T): void;
  isWatched(key: string): boolean;
}

/** A Subject per observed key, so delivering to one key's observers does not filter every value. */
export function createLiveChannels<T>(): LiveChannels<T> {
  const live = new Map<string, { readonly subject: Subject<T>; observers: number }>();
  return {
    channel$: (key) =>
      new Observable<T>((subscriber) => {
        let channel = live.get(key);
        if (!channel) live.set(key, (channel = { subject: new Subject<T>(), observers: 0 }));
        const observed = channel;
        observed.observers += 1;
        const subscription = observed.subject.subscribe(subscriber);
        return () => {
          subscription.unsubscribe();
          observed.observers -= 1;
          if (observed.observers === 0 && live.get(key) === observed) live.delete(key);
        };
      }),
    next: (key, value) => live.get(key)?.subject.next(value),
    isWatched: (key) => live.has(key),
  };
}

export function createEventHub(config: EventHubConfig = {}): EventHub {
  const bufferSize = config.bufferSize ?? DEFAULT_HUB_CONFIG.bufferSize;
  if (!Number.isInteger(bufferSize) || bufferSize < 1) {
    throw new RangeError(`createEventHub: bufferSize must be a positive integer, got ${String(bufferSize)}`);
  }
  const all = new Subject<SequencedEvent>();
  const logs = createConversationLogs(bufferSize, config.lastSeqOf ?? (() => 0));
  const live = createLiveChannels<SequencedEvent>();
  const deliver = createInOrderDelivery((frame) => {
    all.next(frame);
    live.next(frame.event.conv_id, frame);
  });
  // A per-conversation Subject, so fan-out to one conversation's clients does not filter every event.
  const conversation$ = (convId: string): Observable<SequencedEvent> => live.channel$(convId);
  return {
    publish: (event) => {
      const frame = logs.append(event);
      deliver(frame);
      return frame;
    },
    events$: all.asObservable(),
    conversation$,
    replay$: (convId, sinceSeq) =>
      replayThenLive$(conversation$(convId), () => logs.buffered(convId, sinceSeq).frames, sinceSeq),
    buffered: logs.buffered,
    lastSeq: logs.lastSeq,
    isWatched: (convId) => live.isWatched(convId),
    forget: logs.forget,
    seed: logs.seed,
    rewind: logs.rewind,
  };
}

/** The hub's memory of each conversation: what the hub stamps, keeps and takes back, apart from delivery. */
type ConversationLogs = Pick<EventHub, 'buffered' | 'lastSeq' | 'forget' | 'seed' | 'rewind'> & {
  /** Stamps the event with its conversation's next seq and buffers the frame. */
  append(event: StepwiseEvent): SequencedEvent;
};

/**
 * Seq and replay buffer per conversation. Kept apart from delivery because sequencing is the hub's
 * durable contract (seed, rewind: docs/protocol.md, Durability) while delivery is only fan-out.
 */
function createConversationLogs(bufferSize: number, storedSeq: (convId: string) => number): ConversationLogs {
  const logs = new Map<string, ConversationLog>();
  const logOf = (convId: string): ConversationLog => {
    let log = logs.get(convId);
    if (!log) logs.set(convId, (log = { seq: storedSeq(convId), frames: [] }));
    return log;
  };
  const lastSeq = (convId: string): number => logs.get(convId)?.seq ?? storedSeq(convId);
  return {
    append: (event) => {
      const log = logOf(event.conv_id);
      const frame: SequencedEvent = { seq: ++log.seq, event };
      log.frames.push(frame);
      // Trim in batches so the buffer costs O(1) amortised per publish.
      if (log.frames.length > bufferSize * 2) log.frames.splice(0, log.frames.length - bufferSize);
      return frame;
    },
    buffered: (convId, sinceSeq = 0, limit = Number.POSITIVE_INFINITY) => {
      const log = logs.get(convId);
      return log ? bufferedOf(log, bufferSize, sinceSeq, limit) : { frames: [], lastSeq: lastSeq(convId) };
    },
    lastSeq,
    forget: (convId) => {
      logs.delete(convId);
    },
    seed: (convId, lastSeq) => {
      const log = logOf(convId);
      if (!Number.isInteger(lastSeq) || lastSeq < log.seq) {
        throw new RangeError(`hub.seed: lastSeq must be an integer >= ${log.seq} for "${convId}", got ${String(lastSeq)}`);
      }
      log.seq = lastSeq;
    },
    rewind: (convId, lastSeq) => {
      const log = logs.get(convId);
      if (!log || lastSeq >= log.seq) return;
      log.seq = lastSeq;
      const kept = log.frames.findIndex((frame) => frame.seq > lastSeq);
      if (kept >= 0) log.frames.length = kept;
    },
  };
}

/**
 * Delivers each frame, in order. Publishing from inside a subscriber (a dashboard continuing a pause
 * it was just told about) must not overtake the frame still being delivered: later frames queue until
 * delivery finishes, so every subscriber sees every conversation in seq order.
 */
function createInOrderDelivery(deliver: (frame: SequencedEvent) => void): (frame: SequencedEvent) => void {
  const queue: SequencedEvent[] = [];
  let delivering = false;
  return (frame) => {
    if (delivering) {
      queue.push(frame);
      return;
    }
    delivering = true;
    try {
      deliver(frame);
      for (let next = queue.shift(); next; next = queue.shift()) deliver(next);
    } finally {
      delivering = false;
    }
  };
}

/** The log's frames after `sinceSeq`, at most the buffer's size and `limit`. */
function bufferedOf(log: ConversationLog, bufferSize: number, sinceSeq: number, limit: number): BufferedFrames {
  const start = log.frames.findIndex((frame) => frame.seq > sinceSeq);
  const after = start < 0 ? [] : log.frames.slice(start);
  const kept = after.length > bufferSize ? after.slice(after.length - bufferSize) : after;
  return { frames: kept.slice(0, limit), lastSeq: log.seq };
}
