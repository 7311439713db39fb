import { get, post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { runToPause } from '../durable/helpers.js';
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
    await Promise.all([inbox.close(), late.close(), ws.close()]);
  });
});
