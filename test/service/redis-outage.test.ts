import { get, post, type Reply } from '../helpers/server-harness.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { runToPause, until, useDurableServers } from '../durable/helpers.js';
import { TEST_LEASE_MS } from './helpers.js';

/**
 * Redis away for 3 s during a paused run: 503 `store_unavailable`, no crash, and back by itself (docs/protocol.md,
 * Several instances).
 */
describe('two instances while Redis is down', () => {
  const redis = useRedisServer();
  const { dir: d, serve } = useDurableServers();

  it('should answer 503 store_unavailable on B while Redis is down, then finish A\'s run from B', async () => {
    const script = d().script('tool', 'slow');
    const flags = ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS)];
    const [a, b] = await Promise.all([serve(d(), script, flags), serve(d(), script, flags)]);
    const { ws, pause } = await runToPause(a.base, a.wsBase, 'ro1');
    await redis().stop();
    const pauses = await get(b.base, '/debug/pauses');
    expect(pauses.status).toBe(503);
    expect(pauses.body.error.code).toBe('store_unavailable');
    const continued = await post(b.base, '/debug/continue', { pause_id: pause.pause_id });
    expect(continued.status).toBe(503);
    await new Promise((done) => setTimeout(done, 3000));
    await redis().start();
    expect((await get(a.base, '/healthz')).status).toBe(200);
    // Sent again until it is done: a 503 without an unknown outcome took no effect, so only after one with it
    // may the decision be found recorded (409 continued) instead of answered 200.
    const replies: Reply[] = [];
    await until(
      async () => {
        replies.push(await post(b.base, '/debug/continue', { pause_id: pause.pause_id }));
        return replies.at(-1)!;
      },
      (reply) => reply.status !== 503,
      10_000,
    );
    const last = replies.at(-1)!;
    if (last.status === 409) {
      expect(last.body.error).toMatchObject({ code: 'pause_resolved', details: { reason: 'continued' } });
      expect(replies.at(-2)?.body.error.details).toEqual({ outcome: 'unknown' });
    } else {
      expect(last.status).toBe(200);
      expect(last.body.pause.pause_id).toBe(pause.pause_id);
    }
    const afterTools = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    // Each pause decided once, by the decisions sent to B.
    const { decisions } = (await get(b.base, `/conversations/ro1/decisions`)).body;
    expect(decisions.map((decision: { pause_id: string }) => decision.pause_id)).toEqual([pause.pause_id, afterTools.pause_id]);
    await ws.close();
  }, 60_000);
});
