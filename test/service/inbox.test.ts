import { get, post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { runToPause, until } from '../durable/helpers.js';
import { useTwoInstances } from './helpers.js';

/**
 * The inbox of a service (docs/protocol.md, The inbox): an approver on either instance sees the pauses of
 * runs on the other, live and listed, and answers them there.
 */
describe('the inbox across two instances', () => {
  const instances = useTwoInstances();

  it('should stream and list on B the pause of a run A owns, and its resume', async () => {
    const { a, b } = await instances();
    const inbox = await SemClient.connect(`${b.wsBase}/ws/pauses`);
    const { ws, pause } = await runToPause(a.base, a.wsBase, 'inbox-svc');
    expect(await inbox.next('debugger.pause')).toMatchObject({ pause_id: pause.pause_id, seq: pause.seq, metadata: { conversation_id: 'inbox-svc' } });
    expect((await get(b.base, '/pauses')).body.pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, conv_id: 'inbox-svc' })]);
    const late = await SemClient.connect(`${b.wsBase}/ws/pauses`);
    expect(late.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id })]);
    expect((await post(b.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    expect(await inbox.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'continued' });
    await late.next('debugger.resume');
    // Ended, so the next test's instances find no run of this one to take over while they list.
    const afterTools = await inbox.next('debugger.pause');
    expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    await ws.next('run.end');
    await Promise.all([inbox.close(), late.close(), ws.close()]);
  });

  it('should list the soonest pauses of both instances first with a limit, from the deadline index, in pages', async () => {
    const { a, b } = await instances();
    // Deadlines in the order the runs pause, alternating instances, more than one page of the index.
    const convs = Array.from({ length: 210 }, (_, i) => `inbox-many-${String(i).padStart(3, '0')}`);
    for (const [i, conv] of convs.entries()) {
      const on = i % 2 === 0 ? a : b;
      expect((await post(on.base, '/chat', { prompt: 'go', conv_id: conv, overrides: { step_mode: true } })).status).toBe(200);
    }
    const all = await until(async () => (await get(b.base, '/pauses')).body.pauses as { pause_id: string; conv_id: string; deadline_ms: number }[], (pauses) => pauses.length >= convs.length);
    const soonest = [...all].sort((x, y) => x.deadline_ms - y.deadline_ms || (x.pause_id < y.pause_id ? -1 : 1));
    expect(all).toEqual(soonest);
    for (const on of [a, b]) {
      expect((await get(on.base, '/pauses?limit=5')).body.pauses).toEqual(soonest.slice(0, 5));
      // Past one page (200) of the index: the second page is read too.
      expect((await get(on.base, '/pauses?limit=205')).body.pauses).toEqual(soonest.slice(0, 205));
    }
    // A decided pause leaves the index at once.
    expect((await post(a.base, '/debug/continue', { pause_id: soonest[0]!.pause_id })).status).toBe(200);
    expect((await get(b.base, '/pauses?limit=1')).body.pauses).toEqual([soonest[1]]);
  }, 60_000);
});
