/** The wire's frames are the frame codec's (src/streams/frame-codec.ts): named here as the server always has. */
export { toSemFrame, type FrameContext, type Message, type SemEvent, type SemFrame } from '../streams/sem-frames.js';
