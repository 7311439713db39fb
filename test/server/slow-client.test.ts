import type { Socket } from 'node:net';
import type { Script } from '../../src/engines/scripted.js';
import { CLOSE_TRY_AGAIN_LATER } from '../../src/server/ws-forwarder.js';
import { post, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

/** Long streamed text: every llm.delta carries the cumulative text, so the bytes add up fast. */
const WORDS = 800;
const longText: Script = {
  responses: [{ text: Array.from({ length: WORDS }, (_, i) => `word${i}`.padEnd(60, '-') + ' ').join('') }],
  chunk_delay_ms: 1,
};

/** The client's raw socket: pausing it is what a client that stops reading looks like. */
const socketOf = (client: SemClient): Socket => (client.ws as unknown as { _socket: Socket })._socket;

describe('a client that stops reading', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ script: longText, maxClientBufferBytes: 256 * 1024 });
  });
  afterAll(() => t.close());

  it('should be closed with 1013 while another client receives everything', async () => {
    const good = await SemClient.connect(`${t.wsBase}/ws?conv_id=slow`);
    const slow = await SemClient.connect(`${t.wsBase}/ws?conv_id=slow`);
    socketOf(slow).pause();
    await post(t.base, '/chat', { prompt: 'talk a lot', conv_id: 'slow' });
    const end = await good.next('run.end', 20_000);
    expect(end.status).toBe('completed');
    const frames = good.sequenced;
    expect(frames.map((frame) => frame.seq)).toEqual(frames.map((_, i) => i + 1));
    expect(frames.filter((frame) => frame.type === 'llm.delta')).toHaveLength(WORDS);

    socketOf(slow).resume();
    expect(await slow.waitClose()).toBe(CLOSE_TRY_AGAIN_LATER);
    const got = slow.sequenced;
    expect(got.length).toBeLessThan(frames.length);
    expect(got).toEqual(frames.slice(0, got.length));

    // It may come back with since_seq and get exactly the rest.
    const back = await SemClient.connect(`${t.wsBase}/ws?conv_id=slow&since_seq=${got.at(-1)?.seq ?? 0}`);
    await back.next('run.end');
    expect([...got, ...back.sequenced]).toEqual(frames);
    // A replayed backlog far over the budget is not mistaken for a slow reader.
    const all = await SemClient.connect(`${t.wsBase}/ws?conv_id=slow&since_seq=0`);
    await all.next('run.end');
    expect(all.sequenced).toEqual(frames);
    await Promise.all([good.close(), back.close(), all.close()]);
  });

  it('should be closed with 1013 and, reconnecting with since_seq (typically mid-run), miss nothing and get nothing twice', async () => {
    const good = await SemClient.connect(`${t.wsBase}/ws?conv_id=back`);
    const slow = await SemClient.connect(`${t.wsBase}/ws?conv_id=back`);
    socketOf(slow).pause();
    await post(t.base, '/chat', { prompt: 'talk', conv_id: 'back' });
    // Far past its budget (and the kernel's buffers) while it does not read: the server gives up on it.
    await good.waitFor((frame) => frame.type === 'llm.delta' && (frame.seq ?? 0) > 700);
    socketOf(slow).resume();
    expect(await slow.waitClose()).toBe(CLOSE_TRY_AGAIN_LATER);
    const got = slow.sequenced;
    expect(got).toEqual(good.sequenced.slice(0, got.length));

    const back = await SemClient.connect(`${t.wsBase}/ws?conv_id=back&since_seq=${got.at(-1)?.seq ?? 0}`);
    expect((await back.next('run.end', 20_000)).status).toBe('completed');
    await good.next('run.end', 20_000);
    const all = good.sequenced;
    expect(all.filter((frame) => frame.type === 'llm.delta')).toHaveLength(WORDS);
    expect([...got, ...back.sequenced]).toEqual(all);
    await Promise.all([good.close(), back.close()]);
  });
});
