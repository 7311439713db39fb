import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { get, post } from '../helpers/server-harness.js';
import type { CliServer } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { conversation, runToPause, until, useDurableServers } from './helpers.js';

/** A stored conversation whose run has ended. */
const finished = (c: any): boolean => c.conv_id !== undefined && c.running === false;

/**
 * Starts a run and resolves once a client saw its tool start: the store commits before clients get
 * frames (docs/protocol.md, Durability), so the run's checkpoint at the tools boundary is on disk by then.
 */
async function startAndWaitForTool(server: CliServer, conv: string): Promise<void> {
  const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=${conv}`);
  expect((await post(server.base, '/chat', { prompt: 'go', conv_id: conv })).status).toBe(200);
  await ws.waitFor((frame) => frame.type === 'tool.delta' && frame.patch?.exec === true);
  await ws.close();
}

const INTERRUPTED = 'interrupted: the server stopped while this tool ran';

/**
 * Crash tests through the real CLI on a real SQLite file: `kill -9`, start again on the same data dir
 * (docs/protocol.md, Durability).
 */
describe('durable runs across kill -9 and restart', () => {
  const { dir: d, serve } = useDurableServers();

  it('should bring a paused run back paused, with the same pause id and deadline, and finish it on continue', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script);
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'c1');
    expect(pause.phase).toBe('after_inference');
    const listed = (await get(first.base, '/conversations')).body;
    const before = await conversation(first.base, 'c1');
    await ws.close();
    expect(await first.stop('SIGKILL')).toBe(null);

    const second = await serve(d(), script);
    expect((await get(second.base, '/conversations')).body).toEqual(listed);
    const after = await conversation(second.base, 'c1');
    expect(after).toEqual(before);
    expect(after.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms, phase: 'after_inference' })]);
    expect((await get(second.base, '/debug/pauses')).body.pauses).toEqual([
      expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms }),
    ]);
    const again = await SemClient.connect(`${second.wsBase}/ws?conv_id=c1&since_seq=0`);
    expect(again.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
    expect((await again.waitFor((frame) => frame.type === 'log')).message).toMatch(/resumed after a restart/);

    expect((await post(second.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await again.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(second.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    expect(await again.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    const done = await conversation(second.base, 'c1');
    expect(done.running).toBe(false);
    expect(done.turns).toHaveLength(1);
    expect(done.turns[0].blocks.at(-1)).toMatchObject({ kind: 'llm_text', payload: { text: 'All done.' } });
    expect(d().runs()).toEqual(['slow']);
    await again.close();
  }, 30_000);

  it("should go on past a pause as decided when the kill landed after the decision's commit and before the run's next checkpoint", async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script);
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'c5');
    await ws.close();
    await first.stop('SIGKILL');
    // What a deny's 200 had committed (the audit row, and the decision on the run's checkpoint, one
    // transaction) when the process died before its run went on: written by the store the CLI uses.
    const store = createSqliteStore({ dataDir: d().dataDir });
    const decision = { action: 'deny', reason: 'not now' } as const;
    store.recordDecision(
      { conv_id: 'c5', pause_id: pause.pause_id, phase: 'after_inference', inference_id: pause.metadata.inference_id, reason: 'denied', by: 'local', at_ms: Date.now(), tool_call_ids: ['call_1'], message: 'not now' },
      { pause_id: pause.pause_id, decision },
    );
    await store.close();

    const second = await serve(d(), script);
    const again = await SemClient.connect(`${second.wsBase}/ws?conv_id=c5&since_seq=0`);
    const resumed = await again.waitFor((frame) => frame.type === 'log');
    expect(resumed.message).toBe(`run ${pause.metadata.inference_id} resumed after a restart past its pause ${pause.pause_id}, as decided`);
    // Not paused again at the decided pause: the run is past it, at its after_tools pause.
    const next = await again.waitFor((frame) => frame.type === 'debugger.pause' && frame.pause_id !== pause.pause_id);
    expect(next.phase).toBe('after_tools');
    expect((await post(second.base, '/debug/continue', { pause_id: next.pause_id })).status).toBe(200);
    expect(await again.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    const blocks = (await conversation(second.base, 'c5')).turns[0].blocks;
    expect(blocks.find((block: { kind: string }) => block.kind === 'tool_use').payload).toEqual({ id: 'call_1', result: null, error: 'denied by operator: not now' });
    expect(d().runs()).toEqual([]);
    await again.close();
  }, 30_000);

  it('should send an inference again when the kill lands during it', async () => {
    const first = await serve(d(), d().script('slow-model', 'slow', 20_000));
    const ws = await SemClient.connect(`${first.wsBase}/ws?conv_id=c2`);
    expect((await post(first.base, '/chat', { prompt: 'go', conv_id: 'c2' })).status).toBe(200);
    await ws.next('llm.start');
    await ws.close();
    await first.stop('SIGKILL');

    // The same script position, now answered at once: the inference was sent again.
    const second = await serve(d(), d().script('fast-model', 'slow'));
    const done = await until(() => conversation(second.base, 'c2'), finished);
    const blocks = done.turns[0].blocks;
    expect(blocks.map((block: { kind: string }) => block.kind)).toEqual(['user', 'llm_text', 'tool_call', 'tool_use', 'llm_text']);
    expect(blocks.at(-1).payload.text).toBe('All done.');
    expect(d().runs()).toEqual(['slow']);
  }, 30_000);

  it.each([
    { tool: 'slow', payload: { id: 'call_1', result: null, error: INTERRUPTED }, runs: ['slow'] },
    { tool: 'slow_idempotent', payload: { id: 'call_1', result: { ok: true, n: 1 } }, runs: ['slow_idempotent', 'slow_idempotent'] },
  ])('should answer a running $tool after a kill as docs/protocol.md, Durability says (interrupted, or run again when idempotent)', async ({ tool, payload, runs }) => {
    const script = d().script('tool', tool);
    const first = await serve(d(), script, [], { SLOW_TOOL_MS: '20000' });
    await startAndWaitForTool(first, 'c3');
    expect(d().runs()).toEqual([tool]);
    await first.stop('SIGKILL');

    const second = await serve(d(), script);
    const done = await until(() => conversation(second.base, 'c3'), finished);
    const blocks = done.turns[0].blocks;
    expect(blocks.find((block: { kind: string }) => block.kind === 'tool_use').payload).toEqual(payload);
    expect(blocks.at(-1).payload.text).toBe('All done.');
    expect(d().runs()).toEqual(runs);
  }, 30_000);
});
