import { Sender } from 'ws';

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

/** A final, unmasked, uncompressed text frame: what a server's `ws.send(text)` writes. */
const SERVER_TEXT = Object.freeze({ fin: true, opcode: 1, mask: false, readOnly: false, rsv1: false });

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

export function createFrameList(): FrameList {
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
    append: (text) => {
      let end = endOf(ends.length);
      for (const part of Sender.frame(Buffer.from(text), SERVER_TEXT)) {
        reserve(end, part.length);
        end += part.copy(wire, end);
      }
      ends.push(end);
    },
    get length() {
      return ends.length;
    },
    bytes: (from = 0) => wire.subarray(endOf(from), endOf(ends.length)),
  };
}
