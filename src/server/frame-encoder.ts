import type { Subscription } from 'rxjs';
import type { EventHub } from '../streams/event-hub.js';
import type { SequencedEvent } from '../streams/events.js';
import { toSemFrame, type FrameContext, type SemFrame } from './sem-frames.js';
import { encodeTextFrame } from './ws-wire.js';

/** One hub event as every client gets it: serialized once, framed for the wire once. */
export interface EncodedFrame {
  /** The hub event it encodes (a cache hit must be for this very event). */
  readonly event: SequencedEvent['event'];
  readonly frame: SemFrame;
  readonly text: string;
  /** The complete WebSocket text frame (header and payload), written as is to every socket. */
  readonly wire: Buffer;
}

export interface FrameEncoder {
  /** The encoded frame of a hub item (cached, so `/hydrate` and every client see identical frames). */
  encode(item: SequencedEvent): EncodedFrame;
  /** The conversation a pause belongs to, also after it resolved (for 403 on foreign pauses). */
  convOfPause(pauseId: string): string | undefined;
  dispose(): void;
}

const PAUSE_MEMORY = 10_000;

export interface FrameEncoderConfig {
  /** Encoded frames kept per conversation; at least what the hub buffers (it keeps up to 2 × its bufferSize). Default 2100. */
  readonly retain?: number;
}

/** Per conversation, by seq: a Map keyed by number is much cheaper per frame than a WeakMap. */
interface ConversationCache {
  readonly frames: Map<number, EncodedFrame>;
  oldest: number;
}

/**
 * Follows the hub from the first event, in hub order (it subscribes before any client), so the
 * per-inference message ids and models that `llm.*` frames share are known when each is encoded.
 */
export function createFrameEncoder(hub: EventHub, config: FrameEncoderConfig = {}): FrameEncoder {
  const retain = config.retain ?? 2100;
  const caches = new Map<string, ConversationCache>();
  const messages = new Map<string, { id: string; model: string; count: number }>();
  const pauses = new Map<string, string>();
  const context: FrameContext = { messageOf: (inferenceId) => messages.get(inferenceId) };

  const track = ({ event }: SequencedEvent): void => {
    if (event.type === 'inference-started') {
      const count = (messages.get(event.inference_id)?.count ?? 0) + 1;
      messages.set(event.inference_id, { id: `${event.inference_id}:${count}`, model: event.model, count });
    } else if (event.type === 'paused') {
      pauses.set(event.pause.pause_id, event.conv_id);
      if (pauses.size > PAUSE_MEMORY) pauses.delete(pauses.keys().next().value as string);
    }
  };

  const build = (item: SequencedEvent): EncodedFrame => {
    const frame = toSemFrame(item, context);
    const text = safeStringify(frame);
    return { event: item.event, frame, text, wire: encodeTextFrame(text) };
  };

  const remember = (item: SequencedEvent, encoded: EncodedFrame): void => {
    let cache = caches.get(item.event.conv_id);
    // seq 1 again: the hub forgot the conversation and restarted it.
    if (!cache || item.seq === 1) caches.set(item.event.conv_id, (cache = { frames: new Map(), oldest: item.seq }));
    cache.frames.set(item.seq, encoded);
    while (cache.frames.size > retain) cache.frames.delete(cache.oldest++);
  };

  const encode = (item: SequencedEvent): EncodedFrame => {
    const cached = caches.get(item.event.conv_id)?.frames.get(item.seq);
    if (cached && cached.event === item.event) return cached;
    const encoded = build(item);
    remember(item, encoded);
    return encoded;
  };

  // A throw here would be rethrown asynchronously by RxJS and end the process: encoding cannot fail.
  const subscription: Subscription = hub.events$.subscribe((item) => {
    track(item);
    encode(item);
    // The run's message ids are no longer needed once its end frame is encoded.
    if (item.event.type === 'run-ended') messages.delete(item.event.inference_id);
  });

  return {
    encode,
    convOfPause: (pauseId) => pauses.get(pauseId),
    dispose: () => subscription.unsubscribe(),
  };
}

/**
 * Tool results are whatever a tool returned: a BigInt or a cycle must not take the server down, so
 * those are written as strings and `"[circular]"` instead.
 */
export function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    const seen = new WeakSet<object>();
    return JSON.stringify(value, (_key, field: unknown) => {
      if (typeof field === 'bigint') return field.toString();
      if (typeof field === 'object' && field !== null) {
        if (seen.has(field)) return '[circular]';
        seen.add(field);
      }
      return field;
    });
  }
}
