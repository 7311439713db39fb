import { toJsonText } from '../core/json.js';
import type { WireFrame } from '../core/store.js';
import type { SequencedEvent } from './events.js';
import { toSemFrame, type FrameContext, type Message, type SemFrame } from './sem-frames.js';
import { keepNewest } from '../core/bounded-map.js';

/**
 * The one codec of a frame (docs/protocol.md, WebSocket): a hub item becomes its wire JSON once, and
 * those bytes are what the store keeps, what every client is sent, what a replay and `/hydrate` give
 * back and what another instance tails. Nothing downstream encodes a frame again; a reader parses a
 * frame's text only for a field it truly needs (the cluster's pause index, for a pause's id).
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

/** Runs whose model messages a live codec remembers: the newest, a few objects each. */
const RUN_MEMORY = 10_000;

/** Encodes live frames, in hub order, each once. */
export interface FrameCodec {
  /** The item's wire text (kept on the item). Items must come in hub order: an inference's frames name its model. */
  textOf(item: SequencedEvent): string;
}

/**
 * The frame log's codec: it sees every frame in hub order, so each run's current model message is the
 * last `inference-started` it saw (the runtime's inference events carry their message id; the count
 * here names only an event published without one).
 */
export function createFrameCodec(): FrameCodec {
  const runs = new Map<string, { count: number; message: Message }>();
  const context: FrameContext = { messageOf: (_convId, inferenceId) => runs.get(inferenceId)?.message };
  return {
    textOf: (item) => {
      const { event } = item;
      if (event.type === 'inference-started') {
        const count = (runs.get(event.inference_id)?.count ?? 0) + 1;
        keepNewest(runs, event.inference_id, { count, message: { seq: item.seq, id: `${event.inference_id}:${count}`, model: event.model } }, RUN_MEMORY);
      }
      return textOfFrame(item, context);
    },
  };
}
