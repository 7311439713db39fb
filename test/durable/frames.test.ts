import { get, post } from '../helpers/server-harness.js';
import { SemClient, type Frame } from '../helpers/server-ws-client.js';
import { conversation, runToPause, until, useDurableServers } from './helpers.js';

/** A frame's text as the server wrote it (ws parses it; stringifying the parse gives the same bytes back). */
const text = (frame: Frame): string => JSON.stringify({ sem: true, event: frame });
const texts = (frames: readonly Frame[]): string[] => frames.map(text);
const seqs = (frames: readonly Frame[]): number[] => frames.map((frame) => frame.seq as number);
const oneTo = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

/** `/hydrate` read page by page (`limit` frames each), as a client after a restart would. */
async function hydrateAll(base: string, conv: string, limit: number): Promise<Frame[]> {
  const frames: Frame[] = [];
  for (;;) {
    const page = (await get(base, `/hydrate?conv_id=${conv}&since_seq=${frames.at(-1)?.seq ?? 0}&limit=${limit}`)).body;
    frames.push(...page.frames.map((frame: { event: Frame }) => frame.event));
    if (page.frames.length < limit) return frames;
  }
}

/** Every frame of a conversation, from a client joining with `since_seq=0`, once `done` holds for one. */
async function replayAll(wsBase: string, conv: string, done: (frame: Frame) => boolean): Promise<Frame[]> {
  const client = await SemClient.connect(`${wsBase}/ws?conv_id=${conv}&since_seq=0`);
  await client.waitFor(done);
  await client.ping();
  await client.close();
  return client.sequenced;
}

/**
 * The durable frame log through the real CLI (docs/protocol.md, Durability): replay with since_seq and /hydrate work
 * across restarts.
 */
describe('frames across kill -9, SIGTERM and restart', () => {
  const { dir: d, serve } = useDurableServers();

  it('should replay every frame of before a kill -9 with the same seqs and texts, then go on at last_seq + 1', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script);
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'f1');
    await ws.ping();
    const before = ws.sequenced;
    expect(seqs(before)).toEqual(oneTo(before.length));
    const hydrated = (await get(first.base, '/hydrate?conv_id=f1')).body;
    expect(texts(hydrated.frames.map((frame: { event: Frame }) => frame.event))).toEqual(texts(before));
    await ws.close();
    await first.stop('SIGKILL');

    const second = await serve(d(), script);
    // What /hydrate said before the crash, it says after (the frames since are the resumed run's).
    expect((await get(second.base, `/hydrate?conv_id=f1&limit=${before.length}`)).body.frames).toEqual(hydrated.frames);
    const replay = await SemClient.connect(`${second.wsBase}/ws?conv_id=f1&since_seq=0`);
    const resumed = await replay.waitFor((frame) => frame.type === 'log');
    expect(resumed).toMatchObject({ seq: before.length + 1, message: expect.stringMatching(/resumed after a restart/) });
    expect(texts(replay.sequenced.slice(0, before.length))).toEqual(texts(before));

    expect((await post(second.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await replay.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(second.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    await replay.waitFor((frame) => frame.type === 'run.end');
    await replay.ping();
    const all = replay.sequenced;
    // The audit trail is read from the same store.
    const decisions = (await get(second.base, '/conversations/f1/decisions')).body.decisions;
    expect(decisions.map((row: { pause_id: string; by: string }) => [row.pause_id, row.by])).toEqual([[pause.pause_id, 'local'], [afterTools.pause_id, 'local']]);
    expect(seqs(all)).toEqual(oneTo(all.length));
    // The run's second model message is its own, not the first one's again.
    const messages = all.filter((frame) => frame.type === 'llm.start').map((frame) => frame.id);
    expect(messages).toEqual([`${pause.metadata.inference_id}:1`, `${pause.metadata.inference_id}:2`]);

    // Later readers get the very same texts: frames of before from the store, the rest from the buffer.
    expect(texts(await replayAll(second.wsBase, 'f1', (frame) => frame.type === 'run.end'))).toEqual(texts(all));
    expect(texts(await hydrateAll(second.base, 'f1', 4))).toEqual(texts(all));
    await replay.close();
  }, 40_000);

  it('should keep the texts of an inference cut by kill -9 and number the one sent again as the same message', async () => {
    const first = await serve(d(), d().script('slow-model', 'slow', 20_000));
    const ws = await SemClient.connect(`${first.wsBase}/ws?conv_id=f2`);
    expect((await post(first.base, '/chat', { prompt: 'go', conv_id: 'f2' })).status).toBe(200);
    const started = await ws.next('llm.start');
    await ws.ping();
    const before = ws.sequenced;
    await ws.close();
    await first.stop('SIGKILL');

    const second = await serve(d(), d().script('fast-model', 'slow'));
    await until(() => conversation(second.base, 'f2'), (c) => c.running === false);
    const all = await replayAll(second.wsBase, 'f2', (frame) => frame.type === 'run.end');
    expect(seqs(all)).toEqual(oneTo(all.length));
    expect(texts(all.slice(0, before.length))).toEqual(texts(before));
    expect(all[before.length]).toMatchObject({ type: 'log', message: expect.stringMatching(/resumed after a restart at inference/) });
    const messages = all.filter((frame) => frame.type === 'llm.start').map((frame) => frame.id);
    expect(messages).toEqual([started.id, started.id, `${started.metadata.inference_id}:2`]);
    expect(texts(await hydrateAll(second.base, 'f2', 1000))).toEqual(texts(all));
  }, 40_000);

  it('should replay the frames of before a SIGTERM too, and go on after the last stored frame', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script);
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'f3');
    await ws.ping();
    const before = ws.sequenced;
    const closed = ws.waitClose();
    expect(await first.stop('SIGTERM')).toBe(0);
    await closed;

    const second = await serve(d(), script);
    const replay = await SemClient.connect(`${second.wsBase}/ws?conv_id=f3&since_seq=0`);
    await replay.waitFor((frame) => frame.type === 'log');
    expect(texts(replay.sequenced.slice(0, before.length))).toEqual(texts(before));
    expect(replay.sequenced[before.length]).toMatchObject({ type: 'log', seq: before.length + 1 });
    // A client without since_seq gets the frames after ws.hello's last_seq, and that is the newest stored one.
    const late = await SemClient.connect(`${second.wsBase}/ws?conv_id=f3`);
    await late.ping();
    expect(late.sequenced).toEqual([]);
    expect(late.hello.last_seq).toBe(replay.sequenced.at(-1)?.seq);

    await post(second.base, '/chat/cancel', { conv_id: 'f3' });
    const end = await replay.waitFor((frame) => frame.type === 'run.end');
    expect(end).toMatchObject({ status: 'cancelled' });
    expect(await late.next('run.end')).toEqual(end);
    expect(pause.seq).toBeLessThan(end.seq as number);
    await replay.ping();
    expect(seqs(replay.sequenced)).toEqual(oneTo(replay.sequenced.length));
    await Promise.all([replay.close(), late.close()]);
  }, 40_000);
});
