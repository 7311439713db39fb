import { get, post } from '../helpers/server-harness.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { runToPause, useDurableServers } from '../durable/helpers.js';

/**
 * A decision sent to the instance that runs its conversation, which does not answer in time though it lives
 * (docs/protocol.md, Several instances): 503 with an unknown outcome, since the command may still be served. It
 * is, once that instance goes on; sent again, the decision is found recorded (409 pause_resolved), once.
 */
describe('a decision whose instance does not answer in time', () => {
  const redis = useRedisServer();
  const { dir: d, serve } = useDurableServers();
  // Longer than the stall below: the stalled instance keeps its runs.
  const flags = (): string[] => ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', '15000'];

  it('should answer 503 with outcome unknown, and 409 pause_resolved when sent again after it took effect', async () => {
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags()), serve(d(), script, flags())]);
    const { ws, pause } = await runToPause(a.base, a.wsBase, 'slow1');
    process.kill(a.process.pid as number, 'SIGSTOP');
    const timedOut = await post(b.base, '/debug/continue', { pause_id: pause.pause_id }).finally(() => process.kill(a.process.pid as number, 'SIGCONT'));
    expect(timedOut.status).toBe(503);
    expect(timedOut.headers.get('retry-after')).toBe('1');
    expect(timedOut.body.error).toMatchObject({ code: 'owner_unavailable', details: { outcome: 'unknown' } });

    // A goes on and serves the command it was sent: the run resumes.
    await ws.waitFor((frame) => frame.type === 'debugger.resume' && frame.pause_id === pause.pause_id);
    const again = await post(b.base, '/debug/continue', { pause_id: pause.pause_id });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'pause_resolved', details: { reason: 'continued' } });
    const { decisions } = (await get(b.base, '/conversations/slow1/decisions')).body;
    expect(decisions.filter((decision: { pause_id: string }) => decision.pause_id === pause.pause_id)).toHaveLength(1);
    await ws.close();
  }, 60_000);
});
