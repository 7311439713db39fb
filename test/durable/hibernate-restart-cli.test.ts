import { get, post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { HIBERNATE, sleep, untilHibernated } from './hibernate-helpers.js';
import { conversation, runToPause, until, useDurableServers } from './helpers.js';

const decisionsOf = async (base: string, conv: string): Promise<unknown[][]> =>
  (await get(base, `/conversations/${conv}/decisions`)).body.decisions.map((decision: any) => [decision.pause_id, decision.reason, decision.by]);

/**
 * Every way a hibernated pause resolves, through the real CLI on a real SQLite file, also across a
 * `kill -9` (docs/protocol.md, Durability): step mode switched off, an edit, its deadline while the
 * restarted server runs and its deadline passed while the server was down.
 */
describe('serve --hibernate-after-ms, resolutions and restarts', () => {
  const { dir: d, serve } = useDurableServers();

  /** A server pauses the run of c1, the pause hibernates, and the server is killed with SIGKILL: its first pause. */
  async function hibernateThenKill(script: string, flags: readonly string[]): Promise<any> {
    const first = await serve(d(), script, flags);
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'c1');
    await untilHibernated();
    await ws.close();
    expect(await first.stop('SIGKILL')).toBe(null);
    return pause;
  }

  it('should release a hibernated pause when step mode is switched off, and run its tool once', async () => {
    const server = await serve(d(), d().script('tool', 'slow'), HIBERNATE);
    const { ws, pause } = await runToPause(server.base, server.wsBase, 'c1');
    await untilHibernated();
    expect((await post(server.base, '/debug/step/disable', { conv_id: 'c1' })).body).toMatchObject({ ok: true, released: 1 });
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'disabled', by: 'system' });
    expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    expect(d().runs()).toEqual(['slow']);
    expect(await decisionsOf(server.base, 'c1')).toEqual([[pause.pause_id, 'disabled', 'system']]);
    await ws.close();
  }, 30_000);

  it("should run a hibernated pause's tool with the arguments an edit gave it", async () => {
    const server = await serve(d(), d().script('tool', 'slow'), HIBERNATE);
    const { ws, pause } = await runToPause(server.base, server.wsBase, 'c1');
    await untilHibernated();
    expect((await post(server.base, '/debug/continue', { pause_id: pause.pause_id, action: 'edit', edits: { call_1: { n: 5 } } })).status).toBe(200);
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'edited' });
    const afterTools = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    const turn = (await conversation(server.base, 'c1')).turns[0];
    expect(turn.blocks.find((block: any) => block.kind === 'tool_use')).toMatchObject({ payload: { result: { ok: true, n: 5 } } });
    expect((await post(server.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    await ws.close();
  }, 30_000);

  it('should resolve at its deadline a pause that hibernated again after a kill -9, not before', async () => {
    const flags = [...HIBERNATE, '--pause-timeout-ms', '4000'];
    const script = d().script('tool', 'slow');
    const pause = await hibernateThenKill(script, flags);

    const second = await serve(d(), script, flags);
    const again = await SemClient.connect(`${second.wsBase}/ws?conv_id=c1`);
    expect(again.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
    await untilHibernated();
    expect((await get(second.base, '/pauses')).body.pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
    expect(await again.waitFor((frame) => frame.type === 'debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'timeout', by: 'system' });
    expect(Date.now()).toBeGreaterThanOrEqual(pause.deadline_ms);
    // The timeout action continues: the tool runs once, then the run pauses after it.
    await again.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect(d().runs()).toEqual(['slow']);
    expect(await decisionsOf(second.base, 'c1')).toEqual([[pause.pause_id, 'timeout', 'system']]);
    await again.close();
  }, 30_000);

  it('should resolve at the start a hibernated pause whose deadline passed while the server was down', async () => {
    const flags = [...HIBERNATE, '--pause-timeout-ms', '1500'];
    const script = d().script('tool', 'slow');
    const pause = await hibernateThenKill(script, flags);
    await sleep(Math.max(0, pause.deadline_ms - Date.now() + 100));

    const second = await serve(d(), script, flags);
    const next = await until(async () => (await get(second.base, '/debug/pauses')).body.pauses, (pauses) => pauses.length === 1 && pauses[0].phase === 'after_tools');
    expect(next[0].pause_id).not.toBe(pause.pause_id);
    expect(await decisionsOf(second.base, 'c1')).toEqual([[pause.pause_id, 'timeout', 'system']]);
    expect(d().runs()).toEqual(['slow']);
  }, 30_000);
});
