/**
 * The server's frame encoder is the runtime's one (src/streams/frame-codec.ts): every store's frames
 * are encoded there, the same live, replayed, in `/hydrate` and after a restart.
 */
export { createFrameEncoder, encodeFrame, type EncodedFrame, type FrameEncoder } from '../streams/frame-codec.js';

/**
 * A JSON reply `{...head, frames: [...], last_seq}` written around the frames' texts: the very bytes
 * the WebSocket sent, spliced in rather than parsed and encoded again (`/hydrate`).
 */
export function framesReply(head: Readonly<Record<string, string>>, texts: readonly string[], lastSeq: number): string {
  return `${JSON.stringify(head).slice(0, -1)},"frames":[${texts.join(',')}],"last_seq":${lastSeq}}`;
}
