/**
 * Server-to-client WebSocket text frames (RFC 6455 §5.2: FIN, opcode 1, unmasked), built by us and
 * written as is, instead of letting each socket re-encode the same string.
 */
export function encodeTextFrame(text: string): Buffer {
  const length = Buffer.byteLength(text);
  const frame = Buffer.allocUnsafe(headerLength(length) + length);
  frame.write(text, writeHeader(frame, 0, length), 'utf8');
  return frame;
}

/**
 * Frames back to back in one growing buffer: one allocation (amortised) and one write for a turn's
 * frames of a conversation, shared by all its clients, each writing the slice it needs. The texts
 * become bytes at once, so a long burst holds no strings for the garbage collector to trace.
 */
export interface FrameList {
  wire: Buffer;
  /** `ends[i]` is where frame i ends (and frame i + 1 begins). */
  readonly ends: number[];
}

export function createFrameList(): FrameList {
  return { wire: EMPTY, ends: [] };
}

const EMPTY = Buffer.alloc(0);

export function appendTextFrame(list: FrameList, text: string): void {
  const start = list.ends.length === 0 ? 0 : (list.ends[list.ends.length - 1] as number);
  // A UTF-16 unit is 1 to 3 UTF-8 bytes: for most frames that fixes the header at 4 bytes, so the
  // payload is written straight after it, without measuring it first.
  if (text.length >= 126 && 3 * text.length < 65_536) {
    reserve(list, start, start + 4 + 3 * text.length);
    const length = list.wire.write(text, start + 4, 'utf8');
    writeHeader(list.wire, start, length);
    list.ends.push(start + 4 + length);
    return;
  }
  const length = Buffer.byteLength(text);
  const end = start + headerLength(length) + length;
  reserve(list, start, end);
  list.wire.write(text, writeHeader(list.wire, start, length), 'utf8');
  list.ends.push(end);
}

/** Grows the list's buffer to hold `end` bytes, keeping its first `used`. */
function reserve(list: FrameList, used: number, end: number): void {
  if (end <= list.wire.length) return;
  const grown = Buffer.allocUnsafe(Math.max(end, 2 * list.wire.length, 1024));
  list.wire.copy(grown, 0, 0, used);
  list.wire = grown;
}

/** Frames `[from, to)` of the list, as one buffer (a view, not a copy). */
export function framesOf(list: FrameList, from: number, to: number): Buffer {
  const start = from === 0 ? 0 : (list.ends[from - 1] as number);
  return list.wire.subarray(start, list.ends[to - 1]);
}

function headerLength(length: number): number {
  return length < 126 ? 2 : length < 65_536 ? 4 : 10;
}

/** Writes a text frame's header at `at` for a payload of `length` bytes; returns where the payload goes. */
function writeHeader(frame: Buffer, at: number, length: number): number {
  frame[at] = 0x81;
  if (length < 126) {
    frame[at + 1] = length;
    return at + 2;
  }
  if (length < 65_536) {
    frame[at + 1] = 126;
    frame.writeUInt16BE(length, at + 2);
    return at + 4;
  }
  frame[at + 1] = 127;
  frame.writeBigUInt64BE(BigInt(length), at + 2);
  return at + 10;
}
