import { get, post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { runToPause, until, useDurableServers } from '../durable/helpers.js';
import { TEST_LEASE_MS } from './helpers.js';

// How long past "lease + 1 s" (docs/protocol.md, Several instances) a loaded test machine may take to answer the polls that
// observe the takeover; `npm run bench` (`failover`) measures the real figure on a quiet one.
const POLL_SLACK_MS = 2000;

/** When an owner dies, another instance takes its runs over as a restart would (docs/protocol.md, Several instances). */
describe('failover between instances', () => {
  const redis = useRedisServer();
  const { dir: d, serve } = useDurableServers();
  const seqs = (client: SemClient): number[] => client.sequenced.map((frame) => frame.seq as number);
  const flags = (): string[] => ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS)];

  it('should pause A\'s run again on B after kill -9 of A, same pause id and deadline, and finish it from B with no frame lost', async () => {
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags()), serve(d(), script, flags())]);
    const { ws: onA, pause } = await runToPause(a.base, a.wsBase, 'fo1');
    await a.stop('SIGKILL');

    await until(async () => b.stdout(), (out) => out.includes('service: took over the run of fo1, paused again'), TEST_LEASE_MS + 1000 + POLL_SLACK_MS);
    const listed = await get(b.base, '/debug/pauses?conv_id=fo1');
    expect(listed.body.pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, phase: 'after_inference', deadline_ms: pause.deadline_ms })]);
    expect(listed.body.pauses[0].tool_calls).toEqual(pause.extra.tool_calls.map(({ id, name, input }: { id: string; name: string; input: unknown }) => ({ id, name, input })));

    // The client that was on A comes back on B from the last seq it had: nothing missed, nothing twice.
    const onB = await SemClient.connect(`${b.wsBase}/ws?conv_id=fo1&since_seq=${pause.seq as number}`);
    expect((await post(b.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await onB.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    const end = await onB.waitFor((frame) => frame.type === 'run.end');
    expect(end).toMatchObject({ status: 'completed' });

    const seen = [...seqs(onA).filter((seq) => seq <= (pause.seq as number)), ...seqs(onB)];
    expect(seen).toEqual(Array.from({ length: end.seq as number }, (_, i) => i + 1));
    expect(onB.sequenced.find((frame) => frame.type === 'log')).toMatchObject({ fields: { resumed: true, next: 'after_inference' } });
    expect(d().runs()).toEqual(['slow']);
    await Promise.all([onA.close(), onB.close()]);
  }, 60_000);

  it('should run an interrupted idempotent tool again on B after kill -9 of A during it', async () => {
    const script = d().script('tool', 'slow_idempotent');
    const env = { SLOW_TOOL_MS: '60000' };
    const [a, b] = await Promise.all([serve(d(), script, flags(), env), serve(d(), script, flags())]);
    const onB = await SemClient.connect(`${b.wsBase}/ws?conv_id=fo2`);
    expect((await post(a.base, '/chat', { prompt: 'go', conv_id: 'fo2' })).status).toBe(200);
    await onB.waitFor((frame) => frame.type === 'tool.delta');
    await until(async () => d().runs(), (runs) => runs.length === 1);
    await a.stop('SIGKILL');

    // B's tool is quick (no SLOW_TOOL_MS): the run it took over ends there.
    const end = await onB.waitFor((frame) => frame.type === 'run.end', 0, TEST_LEASE_MS + 1000 + POLL_SLACK_MS + 5000);
    expect(b.stdout()).toContain('service: took over the run of fo2');
    expect(end).toMatchObject({ status: 'completed' });
    expect(d().runs()).toEqual(['slow_idempotent', 'slow_idempotent']);
    expect(seqs(onB)).toEqual(Array.from({ length: end.seq as number }, (_, i) => i + 1));
    await onB.close();
  }, 60_000);

  it('should leave a live instance\'s runs to it when another instance starts', async () => {
    const script = d().script('tool', 'slow');
    const a = await serve(d(), script, flags());
    const { ws: onA, pause } = await runToPause(a.base, a.wsBase, 'fo3');
    const c = await serve(d(), script, flags());
    // Other tests' conversations share this Redis; none has a run C may take.
    expect(c.stdout()).toMatch(/store: \d+ conversation\(s\) restored, 0 run\(s\) resumed/);

    // Still A's: a continue posted to C reaches A, and the run goes on there once, with no second pause.
    expect((await post(c.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await onA.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(c.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    const end = await onA.waitFor((frame) => frame.type === 'run.end');
    expect(seqs(onA)).toEqual(Array.from({ length: end.seq as number }, (_, i) => i + 1));
    expect(onA.sequenced.filter((frame) => frame.type === 'log')).toEqual([]);
    expect(d().runs()).toEqual(['slow']);
    await onA.close();
  }, 60_000);
});
