import { get, post } from '../helpers/server-harness.js';
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
    const resumed = await until(() => post(b.base, '/debug/continue', { pause_id: pause.pause_id }), (reply) => reply.status === 200, 10_000);
    expect(resumed.body.pause.pause_id).toBe(pause.pause_id);
    const afterTools = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    await ws.close();
  }, 60_000);
});
