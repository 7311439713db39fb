import { get, post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { runToPause, until, useDurableServers } from '../durable/helpers.js';
import { TEST_LEASE_MS } from './helpers.js';

const POLL_SLACK_MS = 2000;
/** Long enough past `--hibernate-after-ms 100` for the owner's run to have left its memory. */
const HIBERNATED_MS = 700;
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/**
 * Hibernated pauses in a service of two instances on one Redis (docs/protocol.md, Durability and
 * Several instances): the owner's run leaves its memory and nothing changes for any instance.
 */
describe('hibernation across instances', () => {
  const redis = useRedisServer();
  const { dir: d, serve } = useDurableServers();
  const flags = (): string[] => ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS), '--hibernate-after-ms', '100'];
  const seqs = (client: SemClient): number[] => client.sequenced.map((frame) => frame.seq as number);

  it("should decide A's hibernated pauses from B, and keep the run A's, with every frame once", async () => {
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags()), serve(d(), script, flags())]);
    const { ws, pause } = await runToPause(a.base, a.wsBase, 'hb1');
    await sleep(HIBERNATED_MS);
    expect((await get(b.base, '/debug/pauses?conv_id=hb1')).body.pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
    expect((await post(b.base, '/chat', { prompt: 'again', conv_id: 'hb1' })).status).toBe(409);
    expect((await post(b.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    await sleep(HIBERNATED_MS);
    expect((await post(b.base, '/debug/step/disable', { conv_id: 'hb1' })).body).toMatchObject({ ok: true, released: 1 });
    expect(await ws.waitFor((frame) => frame.type === 'debugger.resume' && frame.pause_id === afterTools.pause_id)).toMatchObject({ reason: 'disabled' });
    const end = await ws.waitFor((frame) => frame.type === 'run.end');
    expect(end).toMatchObject({ status: 'completed' });
    expect(seqs(ws)).toEqual(Array.from({ length: end.seq as number }, (_, i) => i + 1));
    expect(ws.sequenced.filter((frame) => frame.type === 'log')).toEqual([]);
    expect(d().runs()).toEqual(['slow']);
    await ws.close();
  }, 60_000);

  it("should take over a run B sees hibernated on A after kill -9 of A, with the same pause id and deadline", async () => {
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags()), serve(d(), script, flags())]);
    const { ws: onA, pause } = await runToPause(a.base, a.wsBase, 'hb2');
    await sleep(HIBERNATED_MS);
    await a.stop('SIGKILL');
    await until(async () => b.stdout(), (out) => out.includes('service: took over the run of hb2, paused again'), TEST_LEASE_MS + 1000 + POLL_SLACK_MS);
    // Left long enough on B to hibernate there too before it is decided.
    await sleep(HIBERNATED_MS);
    const onB = await SemClient.connect(`${b.wsBase}/ws?conv_id=hb2&since_seq=${pause.seq as number}`);
    expect(onB.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
    expect((await post(b.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await onB.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    const end = await onB.waitFor((frame) => frame.type === 'run.end');
    expect(end).toMatchObject({ status: 'completed' });
    expect([...seqs(onA).filter((seq) => seq <= (pause.seq as number)), ...seqs(onB)]).toEqual(Array.from({ length: end.seq as number }, (_, i) => i + 1));
    expect(d().runs()).toEqual(['slow']);
    await Promise.all([onA.close(), onB.close()]);
  }, 60_000);
});
