import { get, post } from '../helpers/server-harness.js';
import { runCli } from '../helpers/server-cli.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { conversation, runToPause, until, useDurableServers } from './helpers.js';

/**
 * `serve --store redis` through the real CLI on a real redis-server: what SQLite keeps, Redis keeps
 * (docs/protocol.md, Durability and Several instances).
 */
describe('durable runs on --store redis across kill -9 and restart', () => {
  const redis = useRedisServer();
  const { dir: d, serve } = useDurableServers();
  // Each test its own prefix would need a flag; each its own conversation ids on one Redis do as well.
  const redisFlags = (): string[] => ['--store', 'redis', '--redis-url', redis().url];

  it('should keep a finished run and a paused one through kill -9, and finish the paused one on the next start', async () => {
    const script = d().script('tool', 'slow');
    // A short lease: the restarted instance cannot tell its dead former self from a live instance, so it
    // takes the paused run over once that one's lease lapses (docs/protocol.md, Several instances), not at once.
    const flags = [...redisFlags(), '--lease-ms', '1000'];
    const first = await serve(d(), script, flags);
    expect(first.stdout()).toContain(`store: redis at ${redis().url}`);
    expect((await post(first.base, '/chat', { prompt: 'go', conv_id: 'k1' })).status).toBe(200);
    const done = await until(() => conversation(first.base, 'k1'), (c) => c.running === false);
    expect(done.turns[0].blocks.at(-1)).toMatchObject({ kind: 'llm_text', payload: { text: 'All done.' } });
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'k2');
    const listed = (await get(first.base, '/conversations')).body;
    await ws.close();
    expect(await first.stop('SIGKILL')).toBe(null);

    const second = await serve(d(), script, flags);
    expect((await get(second.base, '/conversations')).body).toEqual(listed);
    expect(await conversation(second.base, 'k1')).toEqual(done);
    // Its former self's heartbeat may still live when it starts (the run is then taken over once it
    // lapses) or be gone already on a loaded machine (the run is then recovered at start): both keep it paused.
    await until(async () => second.stdout(), (out) => out.includes('service: took over the run of k2, paused again') || out.includes('1 run(s) resumed (1 paused)'), 5000);

    const paused = await SemClient.connect(`${second.wsBase}/ws?conv_id=k2&since_seq=0`);
    expect(paused.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
    expect((await post(second.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const afterTools = await paused.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(second.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    expect(await paused.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    expect((await get(second.base, '/conversations/k2/decisions')).body.decisions.map((each: { reason: string }) => each.reason)).toEqual([
      'continued',
      'continued',
    ]);
    await paused.close();
    expect(d().runs()).toEqual(['slow', 'slow']);
  }, 60_000);

  it('should take the Redis URL from STEPWISE_REDIS_URL', async () => {
    const server = await serve(d(), d().script('tool', 'slow'), ['--store', 'redis'], { STEPWISE_REDIS_URL: redis().url });
    expect(server.stdout()).toContain(`store: redis at ${redis().url}`);
    expect((await post(server.base, '/chat', { prompt: 'go', conv_id: 'k3' })).status).toBe(200);
    await until(() => conversation(server.base, 'k3'), (c) => c.running === false);
    expect(await server.stop('SIGTERM')).toBe(0);
    const next = await serve(d(), d().script('tool', 'slow'), redisFlags());
    expect((await conversation(next.base, 'k3')).turns).toHaveLength(1);
  }, 60_000);

  it('should refuse a bad --redis-url or --lease-ms by name, and list both in --help', () => {
    const url = runCli(['serve', '--store', 'redis', '--redis-url', 'localhost:6379']);
    expect(url.status).toBe(1);
    expect(url.output).toMatch(/--redis-url must be a redis:\/\/ or rediss:\/\/ URL, got "localhost:6379"/);
    const lease = runCli(['serve', '--store', 'redis', '--lease-ms', '5']);
    expect(lease.status).toBe(1);
    expect(lease.output).toMatch(/--lease-ms must be an integer from 100/);
    const help = runCli(['serve', '--help']);
    expect(help.status).toBe(0);
    expect(help.output).toMatch(/--redis-url URL[\s\S]*STEPWISE_REDIS_URL, else redis:\/\/127\.0\.0\.1:6379/);
    expect(help.output).toMatch(/--lease-ms MS[\s\S]*Default: 5000/);
  });
});
