import fc from 'fast-check';
import * as ws from 'ws';
import type { Writable } from 'node:stream';
import { createFrameHeaders, createFrameList } from '../../src/server/ws-frame.js';

/** `ws`'s own parser, in client mode (it expects the server's unmasked frames). */
const { Receiver } = ws as unknown as { Receiver: new (options: { isServer: boolean }) => Writable };

/** Every text message `ws` reads out of the bytes. */
function messagesIn(bytes: Buffer): Promise<string[]> {
  const receiver = new Receiver({ isServer: false });
  const messages: string[] = [];
  receiver.on('message', (data: Buffer, isBinary: boolean) => messages.push(isBinary ? '<binary>' : data.toString()));
  return new Promise((resolve, reject) => {
    receiver.on('error', reject);
    receiver.end(bytes, () => resolve(messages));
  });
}

describe('createFrameList', () => {
  it('should hold text frames that ws reads back as the same messages, from any frame on', async () => {
    // Lengths around the 125 / 65 535 byte boundaries of the frame header.
    const long = fc.tuple(fc.integer({ min: 65_530, max: 65_540 }), fc.constantFrom('a', 'é')).map(([length, char]) => char.repeat(length));
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), long);
    // One server's headers for every list, as the fan-out has: a header made for one frame serves
    // the later frames of its length (up to 4 KB), across the 125-byte boundary of the header's size.
    const headers = createFrameHeaders();
    await fc.assert(
      fc.asyncProperty(fc.array(text, { minLength: 1, maxLength: 8 }), fc.nat(), fc.boolean(), async (texts, skip, shared) => {
        const frames = shared ? createFrameList(headers) : createFrameList();
        for (const text of texts) frames.append(text);
        const from = skip % (texts.length + 1);
        expect(frames.length).toBe(texts.length);
        expect(await messagesIn(frames.bytes(from))).toEqual(texts.slice(from).map((text) => Buffer.from(text).toString()));
      }),
      { numRuns: 50 },
    );
  });
});
