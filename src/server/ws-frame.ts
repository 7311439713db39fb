import { loadWs } from './server-deps.js';

declare module 'ws' {
  /** `ws`'s frame encoder (lib/sender.js): exported by the package, not declared by @types/ws. */
  class Sender {
    static frame(data: Buffer, options: SenderFrameOptions): Buffer[];
  }
  interface SenderFrameOptions {
    readonly fin: boolean;
    readonly opcode: number;
    readonly mask: boolean;
    readonly readOnly: boolean;
    readonly rsv1: boolean;
  }
}

/** The longest header `Sender.frame` makes for an unmasked frame (a 64-bit length). */
const MAX_HEADER = 10;

/** A final, unmasked, uncompressed text frame: what a server's `ws.send(text)` writes. */
const SERVER_TEXT = Object.freeze({ fin: true, opcode: 1, mask: false, readOnly: false, rsv1: false });

/** Frames shorter than this reuse the header `ws` made for the first frame of their length. */
const CACHED_LENGTHS = 4096;

/**
 * The headers `ws` frames text payloads with, by payload length: an unmasked final text frame's
 * header depends on its length alone, so one `Sender.frame` per length serves every frame of it.
 * One per server (no state shared across servers), at most CACHED_LENGTHS small buffers.
 */
export interface FrameHeaders {
  /** The header of a text frame with this payload (only its length is read). */
  headerOf(payload: Buffer): Buffer;
  /** The header of a `length`-byte payload, if one was made already. */
  known(length: number): Buffer | undefined;
}

export function createFrameHeaders(): FrameHeaders {
  const byLength: (Buffer | undefined)[] = [];
  const { Sender } = loadWs();
  return {
    headerOf: (payload) => {
      const [header] = Sender.frame(payload, SERVER_TEXT) as [Buffer];
      if (payload.length < CACHED_LENGTHS) byLength[payload.length] = header;
      return header;
    },
    known: (length) => (length < CACHED_LENGTHS ? byLength[length] : undefined),
  };
}

/**
 * WebSocket text frames back to back in one buffer, each framed by `ws`: a turn's frames of a
 * conversation, written to every client of it at once. The texts become bytes as they come, so a
 * long burst holds no strings for the garbage collector to trace.
 */
export interface FrameList {
  /** Frames `text` after the others. */
  append(text: string): void;
  readonly length: number;
  /** Frames `[from, length)` as one buffer (a view of the list's own). */
  bytes(from?: number): Buffer;
}

export function createFrameList(headers: FrameHeaders = createFrameHeaders()): FrameList {
  let wire = Buffer.allocUnsafe(1024);
  /** `ends[i]` is where frame i ends (and frame i + 1 begins). */
  const ends: number[] = [];
  const endOf = (index: number): number => (index <= 0 ? 0 : (ends[index - 1] as number));

  const reserve = (used: number, bytes: number): void => {
    if (used + bytes <= wire.length) return;
    const grown = Buffer.allocUnsafe(Math.max(used + bytes, 2 * wire.length));
    wire.copy(grown, 0, 0, used);
    wire = grown;
  };

  return {
    // The text is written once, where its payload goes (after room for the longest header), then
    // moved up to the header ws made for it: no buffer per frame, where Buffer.from and a copy cost
    // CPU on every frame of a burst. A header made before for the same length saves a view and a
    // `Sender.frame` a frame, a share of each append that shows when one client gets many small frames.
    append: (text) => {
      const start = endOf(ends.length);
      reserve(start, MAX_HEADER + 3 * text.length);
      const length = wire.write(text, start + MAX_HEADER);
      const header = headers.known(length) ?? headers.headerOf(wire.subarray(start + MAX_HEADER, start + MAX_HEADER + length));
      wire.set(header, start);
      wire.copyWithin(start + header.length, start + MAX_HEADER, start + MAX_HEADER + length);
      ends.push(start + header.length + length);
    },
    get length() {
      return ends.length;
    },
    bytes: (from = 0) => wire.subarray(endOf(from), endOf(ends.length)),
  };
}
