import { get, post } from '../helpers/server-harness.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { runToPause, until, useDurableServers } from '../durable/helpers.js';
import { TEST_LEASE_MS } from './helpers.js';

/**
 * What a client and a non-idempotent tool see when the owner dies (docs/protocol.md, Durability and Several
 * instances); see also failover.test.ts.
 */
describe('a client of an instance that dies, and a tool it was running', () => {
  const redis = useRedisServer();
  const { dir: d, serve } = useDurableServers();
  const flags = (): string[] => ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS)];
  const seqs = (frames: readonly { seq?: unknown }[]): number[] => frames.map((frame) => frame.seq as number);
  const consecutive = (to: number): number[] => Array.from({ length: to }, (_, i) => i + 1);
  const isResumedLog = (frame: any): boolean => frame.type === 'log' && frame.fields?.resumed === true;

  it('should take over a paused run within lease + 1 s of kill -9: same pause, continue on B completes it, a client follows on B', async () => {
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags()), serve(d(), script, flags())]);
    const { ws: onA, pause } = await runToPause(a.base, a.wsBase, 'fo1');
    const seenOnA = [...onA.sequenced];
    const lastSeen = seenOnA.at(-1)?.seq as number;

    const killedAt = Date.now();
    await a.stop('SIGKILL');
    // The client that was on A reconnects to B from the last seq it saw.
    const onB = await SemClient.connect(`${b.wsBase}/ws?conv_id=fo1&since_seq=${lastSeen}`);
    const again = await onB.waitFor((frame) => frame.type === 'debugger.pause' && frame.pause_id === pause.pause_id);
    expect(Date.now() - killedAt).toBeLessThanOrEqual(TEST_LEASE_MS + 1000);
    expect(again).toMatchObject({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms, phase: 'after_inference' });
    const listed = (await get(b.base, '/debug/pauses?conv_id=fo1')).body.pauses;
    expect(listed).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);

    expect((await post(b.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await onB.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    const end = await onB.waitFor((frame) => frame.type === 'run.end');
    expect(end).toMatchObject({ status: 'completed' });
    // Nothing missed, nothing twice: A's frames, then B's from the seq after them.
    expect(seqs([...seenOnA, ...onB.sequenced])).toEqual(consecutive(end.seq as number));
    expect(onB.sequenced.filter(isResumedLog)).toHaveLength(1);
    expect(d().runs()).toEqual(['slow']);
    await Promise.all([onA.close(), onB.close()]);
  }, 60_000);

  async function killDuringTool(tool: string, convId: string): Promise<{ frames: any[]; end: any }> {
    const script = d().script('tool', tool);
    const a = await serve(d(), script, flags(), { SLOW_TOOL_MS: '30000' });
    const b = await serve(d(), script, flags());
    const onA = await SemClient.connect(`${a.wsBase}/ws?conv_id=${convId}`);
    expect((await post(a.base, '/chat', { prompt: 'go', conv_id: convId })).status).toBe(200);
    await onA.waitFor((frame) => frame.type === 'tool.start');
    await until(async () => d().runs(), (runs) => runs.length === 1);
    const lastSeen = onA.sequenced.at(-1)?.seq as number;
    await a.stop('SIGKILL');
    const onB = await SemClient.connect(`${b.wsBase}/ws?conv_id=${convId}&since_seq=${lastSeen}`);
    const end = await onB.waitFor((frame) => frame.type === 'run.end');
    // What A's client had when it reconnected to B: a frame reaching it after lastSeen is B's to replay.
    const frames = [...onA.sequenced.filter((frame) => (frame.seq as number) <= lastSeen), ...onB.sequenced];
    expect(seqs(frames)).toEqual(consecutive(end.seq as number));
    await Promise.all([onA.close(), onB.close()]);
    return { frames, end };
  }

  it('should answer a non-idempotent tool that was running "interrupted" on B, and not run it again', async () => {
    const { frames, end } = await killDuringTool('slow', 'fo2');
    expect(end).toMatchObject({ status: 'completed' });
    expect(frames.filter(isResumedLog)).toHaveLength(1);
    expect(JSON.stringify(frames)).toContain('interrupted: the server stopped while this tool ran');
    expect(d().runs()).toEqual(['slow']);
  }, 60_000);
});
