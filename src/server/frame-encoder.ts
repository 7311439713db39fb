import type { Subscription } from 'rxjs';
import type { EventHub } from '../streams/event-hub.js';
import type { SequencedEvent } from '../streams/events.js';
import { llmDeltaText, toSemFrame, type FrameContext } from './sem-frames.js';

/** One hub event as every client gets it, serialized once. */
export interface EncodedFrame {
  /** The hub event it encodes. */
  readonly event: SequencedEvent['event'];
  /** The frame's JSON text: the payload of its WebSocket frame and its entry in `/hydrate`. */
  readonly text: string;
}

export interface FrameEncoder {
  /** The encoded frame of a hub item (cached, so `/hydrate` and every client see identical frames). */
  encode(item: SequencedEvent): EncodedFrame;
  /** Just the text of `encode(item)`: what the fan-out asks for, once per frame and client. */
  textOf(item: SequencedEvent): string;
  /** The conversation a pause belongs to, also after it resolved (for 403 on foreign pauses). */
  convOfPause(pauseId: string): string | undefined;
  dispose(): void;
}

const PAUSE_MEMORY = 10_000;

export interface FrameEncoderConfig {
  /** Encoded frames kept per conversation; at least what the hub buffers (it keeps up to 2 × its bufferSize). Default 2100. */
  readonly retain?: number;
}

/**
 * Per conversation, a ring of the last `retain` texts by seq: slot `(seq - first) % retain`. Two
 * parallel arrays and no per-frame object or Map entry, since this is written once per frame.
 * A slot is a hit only if it holds this very event (the conversation may have restarted at seq 1).
 */
interface ConversationCache {
  readonly events: (SequencedEvent['event'] | undefined)[];
  readonly texts: string[];
  readonly first: number;
  newest: number;
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
  // The item the hub is delivering right now: every client asks for it just after we encoded it.
  let lastItem: SequencedEvent | undefined;
  let lastText = '';

  const track = ({ event }: SequencedEvent): void => {
    if (event.type === 'inference-started') {
      const count = (messages.get(event.inference_id)?.count ?? 0) + 1;
      messages.set(event.inference_id, { id: `${event.inference_id}:${count}`, model: event.model, count });
    } else if (event.type === 'paused') {
      pauses.set(event.pause.pause_id, event.conv_id);
      if (pauses.size > PAUSE_MEMORY) pauses.delete(pauses.keys().next().value as string);
    }
  };

  const cached = ({ seq, event }: SequencedEvent): string | undefined => {
    const cache = caches.get(event.conv_id);
    if (!cache || seq < cache.first) return undefined;
    const slot = (seq - cache.first) % retain;
    return cache.events[slot] === event ? cache.texts[slot] : undefined;
  };

  const remember = ({ seq, event }: SequencedEvent, text: string): void => {
    let cache = caches.get(event.conv_id);
    // seq 1 again: the hub forgot the conversation and restarted it.
    if (!cache || seq === 1) caches.set(event.conv_id, (cache = { events: [], texts: [], first: seq, newest: seq }));
    // Older than the ring (or than the cache): not kept, so it cannot evict a newer frame.
    if (seq < cache.first || seq <= cache.newest - retain) return;
    const slot = (seq - cache.first) % retain;
    // The ring grows by appending, so the arrays stay packed (a gap only when frames came out of order).
    while (cache.events.length < slot) {
      cache.events.push(undefined);
      cache.texts.push('');
    }
    cache.events[slot] = event;
    cache.texts[slot] = text;
    if (seq > cache.newest) cache.newest = seq;
  };

  const textOf = (item: SequencedEvent): string => {
    if (item === lastItem) return lastText;
    let text = cached(item);
    if (text === undefined) {
      text = llmDeltaText(item, context) ?? safeStringify(toSemFrame(item, context));
      remember(item, text);
    }
    lastItem = item;
    lastText = text;
    return text;
  };

  // A throw here would be rethrown asynchronously by RxJS and end the process: encoding cannot fail.
  const subscription: Subscription = hub.events$.subscribe((item) => {
    track(item);
    textOf(item);
    // The run's message ids are no longer needed once its end frame is encoded.
    if (item.event.type === 'run-ended') messages.delete(item.event.inference_id);
  });

  return {
    encode: (item) => ({ event: item.event, text: textOf(item) }),
    textOf,
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
