import { get, post } from '../helpers/server-harness.js';
import { runToPause, until } from '../durable/helpers.js';
import { useTwoInstances } from './helpers.js';

/**
 * Commands posted to any instance reach the run's owner, and the owner's answer is the reply (docs/protocol.md,
 * Several instances).
 */
describe('commands across instances', () => {
  const twoInstances = useTwoInstances();

  it('should list A\'s pause on B, refuse /chat on B with 409, and resume A\'s run from continue and step disable on B', async () => {
    const { a, b } = await twoInstances();
    const { ws, pause } = await runToPause(a.base, a.wsBase, 'cc1');
    const listed = await get(b.base, '/debug/pauses');
    expect(listed.body.pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, conv_id: 'cc1', phase: 'after_inference', deadline_ms: pause.deadline_ms })]);
    expect((await get(b.base, '/debug/pauses?conv_id=cc1')).body.pauses.map((p: { pause_id: string }) => p.pause_id)).toEqual([pause.pause_id]);

    const busy = await post(b.base, '/chat', { prompt: 'again', conv_id: 'cc1' });
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ conv_id: 'cc1', session_id: ws.hello.session_id, error: { code: 'run_in_progress' } });

    const continued = await post(b.base, '/debug/continue', { pause_id: pause.pause_id });
    expect(continued.status).toBe(200);
    expect(continued.body).toMatchObject({ ok: true, pause: { pause_id: pause.pause_id } });
    // The owner's answer comes back: the same pause again is resolved (named with its conversation,
    // since only the owner knows its resolved pauses).
    const again = await post(b.base, '/debug/continue', { pause_id: pause.pause_id, conv_id: 'cc1' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('pause_resolved');

    const afterTools = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    const disabled = await post(b.base, '/debug/step/disable', { conv_id: 'cc1' });
    expect(disabled.body).toMatchObject({ ok: true, session_id: ws.hello.session_id, released: 1 });
    expect(await ws.waitFor((frame) => frame.type === 'debugger.resume' && frame.pause_id === afterTools.pause_id)).toMatchObject({ reason: 'disabled' });
    expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });

    // Once A's run ended its lease is released: the next run may start on B, its seq after A's.
    const next = await until(() => post(b.base, '/chat', { prompt: 'more', conv_id: 'cc1' }), (reply) => reply.status === 200, 5000);
    expect(next.body.session_id).toBe(ws.hello.session_id);
    // B goes on from A's conversation: the script's next answer (A used the first two), A's turns before it.
    const end2 = await ws.waitFor((frame) => frame.type === 'run.end' && frame.inference_id === next.body.inference_id);
    const start2 = ws.sequenced.find((frame) => frame.type === 'run.start' && frame.inference_id === next.body.inference_id);
    const finals2 = ws.sequenced.filter((frame) => frame.type === 'llm.final' && (frame.seq as number) > (start2?.seq as number));
    expect(finals2.map((frame) => frame.text)).toEqual(['Second run.']);
    expect((await get(b.base, '/conversations/cc1')).body.turns.map((turn: { id: string }) => turn.id)).toHaveLength(2);
    const seqs = ws.sequenced.map((frame) => frame.seq);
    expect(seqs).toEqual(Array.from({ length: end2.seq as number }, (_, i) => i + 1));
    await ws.close();
  }, 60_000);

  it('should cancel A\'s run from B, and answer unknown pauses as 404 on B', async () => {
    const { a, b } = await twoInstances();
    const { ws } = await runToPause(a.base, a.wsBase, 'cc2');
    expect((await post(b.base, '/debug/continue', { pause_id: 'pause_nope' })).status).toBe(404);
    const cancelled = await post(b.base, '/chat/cancel', { conv_id: 'cc2' });
    expect(cancelled.body).toEqual({ ok: true, cancelled: true });
    expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'cancelled' });
    await ws.close();
  }, 60_000);
});
