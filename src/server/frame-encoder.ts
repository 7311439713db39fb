import type { Subscription } from 'rxjs';
import type { EventHub } from '../streams/event-hub.js';
import type { SequencedEvent } from '../streams/events.js';
import { toSemFrame, type FrameContext, type Message, type SemFrame } from './sem-frames.js';

/** One hub item as the clients get it. */
export interface EncodedFrame {
  /** The frame as JSON-safe data: what `/hydrate` lists. */
  readonly frame: SemFrame;
  /** `JSON.stringify(frame)`: the payload of its WebSocket text frame. */
  readonly text: string;
}

export interface FrameEncoder {
  /** A hub item's frame: the same whenever it is asked for (live, replayed, in `/hydrate`). */
  encode(item: SequencedEvent): EncodedFrame;
  dispose(): void;
}

/** Conversations and runs per conversation whose model messages are remembered (a few objects a run). */
const CONVERSATION_MEMORY = 10_000;
const RUN_MEMORY = 1_000;

/**
 * Follows the hub from the first event, in hub order (it subscribes before any client), to learn
 * which model message each `llm.*` frame belongs to: the run's inferences in order, each from the
 * seq of its `inference-started`. So any buffered item encodes the same later as it did live, and
 * nothing is kept per frame.
 */
export function createFrameEncoder(hub: EventHub): FrameEncoder {
  /** Per conversation, per run (inference_id), its model messages, oldest first. */
  const messages = new Map<string, Map<string, Message[]>>();
  const context: FrameContext = {
    messageOf: (convId, inferenceId, seq) => lastAtOrBefore(messages.get(convId)?.get(inferenceId) ?? [], seq),
  };

  // Newest last: what is forgotten first is what started longest ago.
  const remember = <V>(map: Map<string, V>, key: string, value: V, limit: number): void => {
    map.delete(key);
    map.set(key, value);
    if (map.size > limit) map.delete(map.keys().next().value as string);
  };

  // A throw here would be rethrown asynchronously by RxJS and end the process: this cannot fail.
  const subscription: Subscription = hub.events$.subscribe(({ seq, event }) => {
    if (event.type === 'inference-started') {
      const runs = messages.get(event.conv_id) ?? new Map<string, Message[]>();
      remember(messages, event.conv_id, runs, CONVERSATION_MEMORY);
      const runMessages = runs.get(event.inference_id) ?? [];
      runMessages.push({ seq, id: `${event.inference_id}:${runMessages.length + 1}`, model: event.model });
      remember(runs, event.inference_id, runMessages, RUN_MEMORY);
    }
  });

  return {
    encode: (item) => encodeFrame(item, context),
    dispose: () => subscription.unsubscribe(),
  };
}

/** The last message started at or before `seq` (binary search: they are in seq order). */
function lastAtOrBefore(runMessages: readonly Message[], seq: number): Message | undefined {
  let low = 0;
  let high = runMessages.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((runMessages[mid] as Message).seq <= seq) low = mid + 1;
    else high = mid;
  }
  return runMessages[low - 1];
}

/** Serializes one frame. */
export function encodeFrame(item: SequencedEvent, context: FrameContext): EncodedFrame {
  const frame = toSemFrame(item, context);
  try {
    return { frame, text: JSON.stringify(frame) };
  } catch {
    // Tool results are whatever a tool returned: a BigInt or a cycle must not take the server down.
    const text = JSON.stringify(frame, jsonSafe());
    return { frame: JSON.parse(text) as SemFrame, text };
  }
}

/** A `JSON.stringify` replacer writing BigInts as strings and repeated objects as `"[circular]"`. */
function jsonSafe(): (key: string, value: unknown) => unknown {
  const seen = new WeakSet<object>();
  return (_key, value) => {
    if (typeof value === 'bigint') return value.toString();
    if (typeof value === 'object' && value !== null) {
      if (seen.has(value)) return '[circular]';
      seen.add(value);
    }
    return value;
  };
}
