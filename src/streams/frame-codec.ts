import type { Observable } from 'rxjs';
import { toJsonText } from '../core/json.js';
import type { WireFrame } from '../core/store.js';
import type { SequencedEvent } from './events.js';
import { createMessageMemory, type FrameReads } from './frame-messages.js';
import { toSemFrame, type FrameContext, type SemFrame } from './sem-frames.js';

/**
 * The one codec of a frame (docs/protocol.md, WebSocket): a hub item becomes its wire JSON once, and
 * those bytes are what the store keeps, what every client is sent, what a replay and `/hydrate` give
 * back and what another instance tails. Nothing downstream encodes a frame again; a reader parses a
 * frame's text only for a field it truly needs (the service's pause index, for a pause's id). One
 * encoder serves every store: a durable store is given each frame's text as it is committed (the frame
 * log's codec, below); the memory store keeps the items, whose text is made when a client first needs it.
 */

/** A frame as clients get it: a hub item (its text made on demand), or its text alone (read or tailed from the store). */
export type LogFrame = SequencedEvent | WireFrame;

/** One frame, encoded. */
export interface EncodedFrame {
  /** The frame as JSON-safe data. */
  readonly frame: SemFrame;
  /** `JSON.stringify(frame)`: the payload of its WebSocket text frame. */
  readonly text: string;
}

/** Serializes one frame. */
export function encodeFrame(item: SequencedEvent, context: FrameContext): EncodedFrame {
  const frame = toSemFrame(item, context);
  try {
    return { frame, text: JSON.stringify(frame) };
  } catch {
    // Tool results are whatever a tool returned: a BigInt or a cycle must not take the server down.
    const text = toJsonText(frame);
    return { frame: JSON.parse(text) as SemFrame, text };
  }
}

/** The conversation a frame belongs to, whichever form it has. */
export const convOfFrame = (frame: LogFrame): string => (frame.event ? frame.event.conv_id : frame.conv_id);

/**
 * A frame's wire text, made once: a hub item keeps the text it was given (`SequencedEvent.text`), so a
 * replay from the hub's buffer sends the very bytes the live frame was.
 */
export function textOfFrame(frame: LogFrame, context: FrameContext): string {
  if (!frame.event) return frame.text;
  if (frame.text !== undefined) return frame.text;
  const { text } = encodeFrame(frame, context);
  (frame as { text?: string }).text = text;
  return text;
}

/** Encodes the frames of a runtime, live, replayed, in `/hydrate` and after a restart, each the same way. */
export interface FrameEncoder {
  /** A frame as JSON-safe data and its text: the same whenever it is asked for (live, replayed, in `/hydrate`, after a restart). */
  encode(item: LogFrame): EncodedFrame;
  /** A frame's wire text: the one it was stored or sent with when it has one, else made here once and kept on the item. */
  textOf(item: LogFrame): string;
  /**
   * Before `encode` is given frames of a conversation from before this process (read from the store
   * after a restart): learns their model messages from the stored log, once per conversation.
   */
  prepare(convId: string, items: readonly LogFrame[]): Promise<void>;
  dispose(): void;
}

/**
 * The encoder of the frames a frame log commits (`frames$`, in hub order: it subscribes before any
 * client), for the server: it learns which model message each `llm.*` frame belongs to as they come
 * (./frame-messages.ts). A durable store's frames all carry the text they were committed with (the
 * frame log's codec), so on one nothing is learned live: remembering the newest conversations'
 * messages would only cost the server memory.
 */
export function createFrameEncoder(frames$: Observable<SequencedEvent>, store: FrameReads): FrameEncoder {
  const messages = createMessageMemory({ store, keepPast: true });
  const { context } = messages;
  // A throw here would be rethrown asynchronously by RxJS and end the process: learning cannot fail.
  const subscription = store.durable ? undefined : frames$.subscribe((item) => messages.learn(item));
  return {
    encode: (item) => (item.event ? encodeFrame(item, context) : { frame: JSON.parse(item.text) as SemFrame, text: item.text }),
    textOf: (item) => textOfFrame(item, context),
    prepare: (convId, items) => messages.prepare(convId, items),
    dispose: () => subscription?.unsubscribe(),
  };
}

/** Encodes live frames, in hub order, each once. */
export interface FrameCodec {
  /** The item's wire text (kept on the item). Items must come in hub order: an inference's frames name its model. */
  textOf(item: SequencedEvent): string;
}

/**
 * The frame log's codec for a durable store: it sees every frame in hub order and encodes each as it
 * comes, so a run's newest model message is all it keeps of the run.
 */
export function createFrameCodec(): FrameCodec {
  const messages = createMessageMemory({ keepPast: false });
  const { context } = messages;
  return {
    textOf: (item) => {
      messages.learn(item);
      return textOfFrame(item, context);
    },
  };
}
