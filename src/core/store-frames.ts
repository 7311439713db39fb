/** A conversation's frame log as the store keeps and pages it (docs/protocol.md, Frames). */

/**
 * One frame of a conversation's log: its `seq` (1, 2, … per conversation, never reused or skipped) and its event.
 * `text`, when the writer made it, is the frame's wire JSON (docs/protocol.md, WebSocket), made once by the frame
 * codec (src/streams/frame-codec.ts): the store keeps those bytes, and every reader (replay, `/hydrate`, another
 * instance's tail) gets them back as they are, never encoded again. Without it the store keeps the event's JSON.
 */
export interface StoredFrame<E extends FrameEvent = FrameEvent> {
  readonly seq: number;
  readonly event: E;
  readonly text?: string;
}

/**
 * A frame read back as the wire JSON it was appended with (`StoredFrame.text`): its event is not read
 * (a reader that needs a field of it parses the text, and only then).
 */
export interface WireFrame {
  readonly seq: number;
  readonly conv_id: string;
  readonly text: string;
  readonly event?: undefined;
}

/** What a frame's event must carry for the store; the rest of it is stored as is (JSON). */
export interface FrameEvent {
  readonly conv_id: string;
  readonly type: string;
}

/**
 * A page of the frame log: frames with seq > since_seq, oldest first, and the newest seq stored.
 * Under a retention limit the oldest frames are gone: the first frame's seq may then exceed since_seq + 1.
 */
export interface FramePage<E extends FrameEvent = FrameEvent, W = never> {
  /** `W`: `WireFrame` for a reader of frames appended with their `text` (the runtime's), else none. */
  readonly frames: readonly (StoredFrame<E> | W)[];
  /** 0 when the conversation has no frame. More to read when the last frame's seq is below it. */
  readonly last_seq: number;
}

export interface FrameQuery {
  /** Frames with a greater seq. Default 0 (from the start). */
  readonly since_seq?: number;
  /** At most this many (the oldest first). Default: all. */
  readonly limit?: number;
}
