import { post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { HIBERNATE, untilHibernated } from './hibernate-helpers.js';
import { conversation, runToPause, useDurableServers } from './helpers.js';

/**
 * A hibernated pause forked at and answered with a grant through the real CLI (docs/protocol.md, Forks,
 * Grants and Durability): exactly as a resident pause.
 */
describe('serve --hibernate-after-ms, forks and grants', () => {
  const { dir: d, serve } = useDurableServers();

  it('should fork at a hibernated pause, and leave the source waiting at it until it is answered', async () => {
    const server = await serve(d(), d().script('tool', 'slow'), HIBERNATE);
    const { ws, pause } = await runToPause(server.base, server.wsBase, 'src');
    await untilHibernated();
    const fork = await post(server.base, '/conversations/src/fork', { pause_id: pause.pause_id });
    expect(fork.status).toBe(200);
    expect(fork.body).toMatchObject({ forked_from: { conv_id: 'src', pause_id: pause.pause_id } });
    const forked = await conversation(server.base, fork.body.conv_id);
    expect(forked.pending_pauses).toEqual([expect.objectContaining({ pause_id: fork.body.pause_id, phase: 'after_inference', tool_calls: pause.extra.tool_calls })]);
    expect(fork.body.pause_id).not.toBe(pause.pause_id);

    const fws = await SemClient.connect(`${server.wsBase}/ws?conv_id=${fork.body.conv_id}`);
    expect((await post(server.base, '/debug/continue', { pause_id: fork.body.pause_id, action: 'deny', reason: 'not in the fork' })).status).toBe(200);
    const forkAfterTools = await fws.waitFor((frame) => frame.type === 'debugger.pause');
    expect((await post(server.base, '/debug/continue', { pause_id: forkAfterTools.pause_id })).status).toBe(200);
    expect(await fws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    expect(d().runs()).toEqual([]);

    // The source's pause, hibernated all along, is as it was.
    expect((await conversation(server.base, 'src')).pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
    expect((await post(server.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect(d().runs()).toEqual(['slow']);
    await Promise.all([ws.close(), fws.close()]);
  }, 30_000);

  it('should remember a grant made at a hibernated pause, and let a later call it covers run without a pause', async () => {
    const server = await serve(d(), d().script('tool', 'slow'), HIBERNATE);
    const { ws, pause } = await runToPause(server.base, server.wsBase, 'c1');
    await untilHibernated();
    const decided = await post(server.base, '/debug/continue', { pause_id: pause.pause_id, remember: { scope: 'server', tools: ['slow'] } });
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({ ok: true, grant: { scope: 'server', tools: ['slow'] } });
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'continued' });
    await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');

    // The grant covers c2's call: no after_inference pause, a granted frame instead, then the pause after the tool.
    const other = await SemClient.connect(`${server.wsBase}/ws?conv_id=c2`);
    expect((await post(server.base, '/chat', { prompt: 'go', conv_id: 'c2', overrides: { step_mode: true } })).status).toBe(200);
    expect(await other.waitFor((frame) => frame.type === 'debugger.granted' || frame.type === 'debugger.pause')).toMatchObject({
      type: 'debugger.granted',
      grant_id: decided.body.grant.grant_id,
      name: 'slow',
    });
    expect(await other.waitFor((frame) => frame.type === 'debugger.pause')).toMatchObject({ phase: 'after_tools' });
    expect(d().runs()).toEqual(['slow', 'slow']);
    await Promise.all([ws.close(), other.close()]);
  }, 30_000);
});
