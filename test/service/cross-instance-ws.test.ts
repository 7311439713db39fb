import { post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { runToPause } from '../durable/helpers.js';
import { useTwoInstances } from './helpers.js';

/**
 * Two real `serve --store redis` processes on one real redis-server are one service (docs/protocol.md, Several
 * instances).
 */
describe('a WebSocket on another instance than the run', () => {
  const twoInstances = useTwoInstances();
  const seqs = (client: SemClient): number[] => client.sequenced.map((frame) => frame.seq as number);
  const consecutive = (from: number, to: number | undefined): number[] => Array.from({ length: (to ?? 0) - from + 1 }, (_, i) => from + i);

  it('should get every frame of a run on A, in seq order with since_seq replay, no gap and no duplicate', async () => {
    const { a, b } = await twoInstances();
    const { ws: onA, pause } = await runToPause(a.base, a.wsBase, 'cw1');
    // Joined after the run began: the frames of before are replayed from the stream, then live ones follow.
    const onB = await SemClient.connect(`${b.wsBase}/ws?conv_id=cw1&since_seq=0`);
    expect(onB.hello.conv_id).toBe('cw1');
    expect(onB.hello.session_id).toBe(onA.hello.session_id);
    await onB.waitFor((frame) => frame.type === 'debugger.pause' && frame.pause_id === pause.pause_id);
    const late = await SemClient.connect(`${b.wsBase}/ws?conv_id=cw1`);
    expect(late.hello.last_seq).toBe(pause.seq);

    expect((await post(a.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await onB.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(a.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    const endOnA = await onA.waitFor((frame) => frame.type === 'run.end');
    const endOnB = await onB.waitFor((frame) => frame.type === 'run.end');
    await late.waitFor((frame) => frame.type === 'run.end');
    expect(endOnB).toEqual(endOnA);
    expect(endOnB).toMatchObject({ status: 'completed' });

    expect(seqs(onA)).toEqual(consecutive(1, endOnA.seq));
    expect(onB.sequenced).toEqual(onA.sequenced);
    expect(seqs(late)).toEqual(consecutive((pause.seq as number) + 1, endOnA.seq));
    expect(late.sequenced).toEqual(onA.sequenced.slice(pause.seq as number));
    await Promise.all([onA.close(), onB.close(), late.close()]);
  }, 60_000);

  it('should follow a conversation B learns of only when its client joins, and replay it later from any seq', async () => {
    const { a, b } = await twoInstances();
    const { ws: onA, pause } = await runToPause(a.base, a.wsBase, 'cw2');
    expect((await post(a.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await onA.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    const onB = await SemClient.connect(`${b.wsBase}/ws?conv_id=cw2&since_seq=3`);
    expect(onB.hello.last_seq).toBe(afterTools.seq);
    expect((await post(a.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    const end = await onA.waitFor((frame) => frame.type === 'run.end');
    await onB.waitFor((frame) => frame.type === 'run.end');
    expect(seqs(onB)).toEqual(consecutive(4, end.seq));
    expect(onB.sequenced).toEqual(onA.sequenced.slice(3));
    await Promise.all([onA.close(), onB.close()]);
  }, 60_000);
});
