import { get, post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { runToPause, until, useDurableServers } from '../durable/helpers.js';
import { TEST_LEASE_MS } from './helpers.js';

// How long past "lease + 1 s" a loaded test machine may take to answer the polls that observe a takeover.
const POLL_SLACK_MS = 2000;
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** The promises of ownership (docs/protocol.md, Several instances), through real processes and signals. */
describe('ownership of runs across instances', () => {
  const redis = useRedisServer();
  const { dir: d, serve } = useDurableServers();
  const flags = (): string[] => ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS)];
  const seqs = (client: SemClient): number[] => client.sequenced.map((frame) => frame.seq as number);
  const signal = (pid: number | undefined, name: NodeJS.Signals): void => void process.kill(pid as number, name);

  it('should keep the runs of an owner stalled for less than the lease (SIGSTOP, SIGCONT)', async () => {
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags()), serve(d(), script, flags())]);
    const { ws: onA, pause } = await runToPause(a.base, a.wsBase, 'own1');
    signal(a.process.pid, 'SIGSTOP');
    await sleep(TEST_LEASE_MS / 2);
    signal(a.process.pid, 'SIGCONT');
    // Twice the lease later, B has looked for orphans many times and found none.
    await sleep(TEST_LEASE_MS * 2);
    expect(b.stdout()).not.toContain('took over');
    expect(a.stdout()).not.toContain('stopped here');

    expect((await post(b.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await onA.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    const end = await onA.waitFor((frame) => frame.type === 'run.end');
    expect(end).toMatchObject({ status: 'completed' });
    expect(seqs(onA)).toEqual(Array.from({ length: end.seq as number }, (_, i) => i + 1));
    expect(onA.sequenced.filter((frame) => frame.type === 'log')).toEqual([]);
    expect(d().runs()).toEqual(['slow']);
    await onA.close();
  }, 60_000);

  it('should let a deposed owner (stalled past the lease) acknowledge nothing and run no tool once it wakes', async () => {
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags()), serve(d(), script, flags())]);
    const { ws: onA, pause } = await runToPause(a.base, a.wsBase, 'own2');
    signal(a.process.pid, 'SIGSTOP');
    await until(async () => b.stdout(), (out) => out.includes('service: took over the run of own2, paused again'), TEST_LEASE_MS + 1000 + POLL_SLACK_MS);

    // A wakes up holding the pause it had; a decision posted to it at once is either refused (503,
    // nothing recorded) or served by B, the owner now: never acknowledged by A.
    signal(a.process.pid, 'SIGCONT');
    const edit = { pause_id: pause.pause_id, action: 'edit', edits: { call_1: { n: 42 } } };
    let answer = await post(a.base, '/debug/continue', edit);
    const firstStatus = answer.status;
    expect([200, 503]).toContain(firstStatus);
    if (firstStatus === 503) {
      expect(answer.headers.get('retry-after')).toBe('1');
      answer = await until(() => post(a.base, '/debug/continue', edit), (reply) => reply.status !== 503, 5000);
    }
    expect(answer.status).toBe(200);
    await until(async () => a.stdout(), (out) => out.includes('own2') && out.includes('its run stopped here'), 5000);

    // The run goes on on B once: one decision, the tool once with the edited arguments, one stream.
    const onB = await SemClient.connect(`${b.wsBase}/ws?conv_id=own2&since_seq=0`);
    const afterTools = await onB.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    const end = await onB.waitFor((frame) => frame.type === 'run.end');
    expect(end).toMatchObject({ status: 'completed' });
    expect(d().runs()).toEqual(['slow']);
    expect(onB.sequenced.find((frame) => frame.type === 'tool.result')).toMatchObject({ result: { ok: true, n: 42 } });
    const decisions = (await get(b.base, '/conversations/own2/decisions')).body.decisions;
    expect(decisions.filter((decision: { pause_id: string }) => decision.pause_id === pause.pause_id)).toHaveLength(1);
    const hydrated = (await get(b.base, '/hydrate?conv_id=own2')).body.frames.map((frame: { event: { type: string; id: string; seq: number } }) => [frame.event.seq, frame.event.type, frame.event.id]);
    expect(onB.sequenced.map((frame) => [frame.seq, frame.type, frame.id])).toEqual(hydrated);
    expect(seqs(onB)).toEqual(Array.from({ length: end.seq as number }, (_, i) => i + 1));
    // What A's client saw before the stall is the same log, not a second one.
    for (const frame of onA.sequenced) expect(hydrated).toContainEqual([frame.seq, frame.type, frame.id]);
    await Promise.all([onA.close(), onB.close()]);
  }, 60_000);

  it('should answer "interrupted" on the new owner for a non-idempotent call its dead owner had started after the decision', async () => {
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags(), { SLOW_TOOL_MS: '60000' }), serve(d(), script, flags())]);
    const { pause } = await runToPause(a.base, a.wsBase, 'own3');
    const onB = await SemClient.connect(`${b.wsBase}/ws?conv_id=own3&since_seq=0`);
    // Acknowledged means committed: the decision and the record that the call started are in the store.
    expect((await post(b.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    await until(async () => d().runs(), (runs) => runs.length === 1);
    await a.stop('SIGKILL');

    const result = await onB.waitFor((frame) => frame.type === 'tool.result', 0, TEST_LEASE_MS + 1000 + POLL_SLACK_MS + 5000);
    expect(result).toMatchObject({ error: 'interrupted: the server stopped while this tool ran' });
    // The decision its dead owner took is known to the new owner from the store: resolved, not unknown.
    const again = await post(b.base, '/debug/continue', { pause_id: pause.pause_id });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'pause_resolved', details: { reason: 'continued' } });
    const afterTools = await onB.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    const end = await onB.waitFor((frame) => frame.type === 'run.end');
    expect(end).toMatchObject({ status: 'completed' });
    expect(d().runs()).toEqual(['slow']);
    expect(seqs(onB)).toEqual(Array.from({ length: end.seq as number }, (_, i) => i + 1));
    await onB.close();
  }, 60_000);

  it('should take over a run whose conversation a client follows on the survivor, and let its pause be decided there', async () => {
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags()), serve(d(), script, flags())]);
    const onB = await SemClient.connect(`${b.wsBase}/ws?conv_id=own5`);
    const { pause } = await runToPause(a.base, a.wsBase, 'own5');
    expect((await post(a.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await onB.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    await a.stop('SIGKILL');
    await until(async () => b.stdout(), (out) => out.includes('service: took over the run of own5, paused again'), TEST_LEASE_MS + 1000 + POLL_SLACK_MS);
    expect((await get(b.base, '/debug/pauses?conv_id=own5')).body.pauses).toEqual([expect.objectContaining({ pause_id: afterTools.pause_id })]);
    expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    expect(await onB.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    await onB.close();
  }, 60_000);

  it('should answer /chat once the conversation is stored: a client joining another instance at once joins it, not a new one', async () => {
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags()), serve(d(), script, flags())]);
    for (const convId of ['own6a', 'own6b', 'own6c', 'own6d', 'own6e']) {
      const chat = await post(a.base, '/chat', { prompt: 'go', conv_id: convId, overrides: { step_mode: true } });
      expect(chat.status).toBe(200);
      const onB = await SemClient.connect(`${b.wsBase}/ws?conv_id=${convId}&since_seq=0`);
      expect((await onB.waitFor((frame) => frame.type === 'ws.hello')).session_id).toBe(chat.body.session_id);
      await onB.waitFor((frame) => frame.type === 'debugger.pause');
      const stored = (await get(b.base, `/conversations/${convId}`)).body;
      expect(stored).toMatchObject({ session_id: chat.body.session_id, step_mode: true });
      await onB.close();
    }
  }, 60_000);

  it('should answer a command for a dead owner\'s run 503 with Retry-After at once, then 200 once it is taken over', async () => {
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags()), serve(d(), script, flags())]);
    const { pause } = await runToPause(a.base, a.wsBase, 'own4');
    await a.stop('SIGKILL');
    const started = Date.now();
    const first = await post(b.base, '/debug/continue', { pause_id: pause.pause_id });
    if (first.status === 503) {
      expect(first.body.error.code).toBe('owner_unavailable');
      expect(first.headers.get('retry-after')).toBe('1');
      expect(Date.now() - started).toBeLessThan(1000);
    }
    const answered = await until(() => post(b.base, '/debug/continue', { pause_id: pause.pause_id }), (reply) => reply.status !== 503, TEST_LEASE_MS + 1000 + POLL_SLACK_MS);
    expect(answered.status).toBe(200);
  }, 60_000);
});
