import { Redis } from 'ioredis';
import { get, post } from '../helpers/server-harness.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { until, useDurableServers } from '../durable/helpers.js';
import { TEST_LEASE_MS } from './helpers.js';

const RUNS = 12;
// How long past "lease + 1 s" (docs/protocol.md, Several instances) a loaded test machine may take.
const POLL_SLACK_MS = 2000;

/** Calls of one Redis command since the last `CONFIG RESETSTAT`, from `INFO commandstats`. */
async function callsOf(redis: Redis, command: string): Promise<number> {
  const stats = await redis.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
}

/**
 * The failover watch (docs/protocol.md, Several instances) costs a look at the instances while they
 * all live, and looks through every run only when one is gone: with 100 000 paused runs in a
 * service, reading every lease each quarter lease on every instance was most of Redis's work.
 */
describe('the failover watch', () => {
  const redis = useRedisServer();
  const { dir: d, serve } = useDurableServers();
  const flags = (): string[] => ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS)];

  it('should read no run while every instance lives, and hand the runs of an instance that stops to another', async () => {
    const client = new Redis(redis().url);
    const script = d().script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d(), script, flags()), serve(d(), script, flags())]);
    const convs = Array.from({ length: RUNS }, (_, i) => `ow${i}`);
    for (const conv of convs) expect((await post(a.base, '/chat', { prompt: 'go', conv_id: conv, overrides: { step_mode: true } })).status).toBe(200);
    const paused = await until(
      async () => (await get(a.base, '/debug/pauses')).body.pauses as { pause_id: string; conv_id: string }[],
      (pauses) => convs.every((conv) => pauses.some((pause) => pause.conv_id === conv)),
    );

    // Each instance's start lists the unfinished runs, and its first look reads every run (after a
    // lease with Redis reachable); the next several (one every quarter lease), with both alive, not one.
    await until(async () => callsOf(client, 'hkeys'), (looks) => looks >= 4, TEST_LEASE_MS + POLL_SLACK_MS);
    await client.config('RESETSTAT');
    await until(async () => callsOf(client, 'smembers'), (looks) => looks >= 8, 10_000);
    expect(await callsOf(client, 'hkeys')).toBe(0);
    expect(await callsOf(client, 'mget')).toBe(0);

    // A stops (SIGTERM: its runs are suspended and their leases let go): B takes every one over, same pause ids.
    expect(await a.stop('SIGTERM')).toBe(0);
    await until(async () => b.stdout(), (out) => convs.every((conv) => out.includes(`service: took over the run of ${conv}, paused again`)), TEST_LEASE_MS + 1000 + POLL_SLACK_MS);
    const onB = (await get(b.base, '/debug/pauses')).body.pauses as { pause_id: string; conv_id: string }[];
    const ids = (pauses: { pause_id: string; conv_id: string }[]): string[] => pauses.filter((pause) => convs.includes(pause.conv_id)).map((pause) => pause.pause_id).sort();
    expect(ids(onB)).toEqual(ids(paused));
    expect(await callsOf(client, 'hkeys')).toBeGreaterThan(0);
    expect((await post(b.base, '/debug/continue', { pause_id: paused[0]!.pause_id })).status).toBe(200);
    client.disconnect();
  }, 60_000);
});
