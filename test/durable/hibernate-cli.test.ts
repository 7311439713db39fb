import { get, post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { conversation, runToPause, useDurableServers } from './helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** Long enough past `--hibernate-after-ms 100` for the run to have left memory. */
const HIBERNATED_MS = 700;

/**
 * Hibernated pauses through the real CLI on a real SQLite file (docs/protocol.md, Durability):
 * a run paused past `--hibernate-after-ms` is listed, decided, timed out and survives `kill -9`
 * exactly as a resident one.
 */
describe('serve --hibernate-after-ms', () => {
  const { dir: d, serve } = useDurableServers();

  it('should list a hibernated pause everywhere, and go on from it on continue with the next frames', async () => {
    const server = await serve(d(), d().script('tool', 'slow'), ['--hibernate-after-ms', '100']);
    const { ws, pause } = await runToPause(server.base, server.wsBase, 'c1');
    const before = await conversation(server.base, 'c1');
    await sleep(HIBERNATED_MS);
    expect(await conversation(server.base, 'c1')).toEqual(before);
    expect(before.running).toBe(true);
    expect((await get(server.base, '/debug/pauses')).body.pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
    const late = await SemClient.connect(`${server.wsBase}/ws?conv_id=c1`);
    expect(late.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);

    expect((await post(server.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'continued', by: 'local' });
    const afterTools = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    await sleep(HIBERNATED_MS);
    expect((await post(server.base, '/debug/continue', { pause_id: afterTools.pause_id, action: 'deny' })).status).toBe(400);
    expect((await post(server.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    expect((await post(server.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(409);
    const done = await conversation(server.base, 'c1');
    expect(done.turns[0].blocks.at(-1)).toMatchObject({ kind: 'llm_text', payload: { text: 'All done.' } });
    expect(d().runs()).toEqual(['slow']);
    const decisions = (await get(server.base, '/conversations/c1/decisions')).body.decisions;
    expect(decisions.map((decision: any) => [decision.pause_id, decision.reason, decision.by])).toEqual([
      [pause.pause_id, 'continued', 'local'],
      [afterTools.pause_id, 'continued', 'local'],
    ]);
    await Promise.all([ws.close(), late.close()]);
  }, 30_000);

  it('should resolve a hibernated pause at its deadline, and end a hibernated run on cancel', async () => {
    const server = await serve(d(), d().script('tool', 'slow'), ['--hibernate-after-ms', '100', '--pause-timeout-ms', '1500', '--pause-timeout-action', 'deny']);
    const { ws, pause } = await runToPause(server.base, server.wsBase, 'c1');
    expect(await ws.waitFor((frame) => frame.type === 'debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'timeout', by: 'system' });
    // Denied by the timeout action: the tool never ran, and the run went on to its next pause.
    const next = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    await sleep(HIBERNATED_MS);
    expect((await post(server.base, '/chat/cancel', { conv_id: 'c1' })).status).toBe(200);
    expect(await ws.waitFor((frame) => frame.type === 'debugger.resume' && frame.pause_id === next.pause_id)).toMatchObject({ reason: 'cancelled', by: 'system' });
    expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'cancelled' });
    expect(d().runs()).toEqual([]);
    expect((await conversation(server.base, 'c1')).running).toBe(false);
    await ws.close();
  }, 30_000);

  it('should bring a run killed -9 while hibernated back paused with the same pause id and deadline', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script, ['--hibernate-after-ms', '100']);
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'c1');
    await sleep(HIBERNATED_MS);
    const before = await conversation(first.base, 'c1');
    await ws.close();
    expect(await first.stop('SIGKILL')).toBe(null);

    const second = await serve(d(), script, ['--hibernate-after-ms', '100']);
    expect(await conversation(second.base, 'c1')).toEqual(before);
    await sleep(HIBERNATED_MS);
    const again = await SemClient.connect(`${second.wsBase}/ws?conv_id=c1`);
    expect(again.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
    expect((await post(second.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await again.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(second.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    expect(await again.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    expect(d().runs()).toEqual(['slow']);
    await again.close();
  }, 30_000);
});
