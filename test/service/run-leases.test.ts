import { Redis } from 'ioredis';
import { createRunLeases, type RunLeases } from '../../src/service/run-leases.js';
import { useRedisServer } from '../helpers/redis-server.js';

/**
 * A conversation's lease (docs/protocol.md, Several instances) when its run ends and the next one starts
 * at once on the same instance: the release of the ended run's lease must not delete the lease the new
 * run was just given, or each of its writes is refused as lease_lost and its stream stops.
 */
describe('run leases on a real Redis', () => {
  const server = useRedisServer();
  const clients: Redis[] = [];
  const leasesOf: RunLeases[] = [];
  let running: string[] = [];

  const start = (): { leases: RunLeases; redis: Redis } => {
    const [redis, heartbeat] = [new Redis(server().url), new Redis(server().url)];
    clients.push(redis, heartbeat);
    const leases = createRunLeases(redis, heartbeat, {
      instanceId: 'inst_a',
      leaseMs: 60_000,
      keysOf: (convId) => ({ lease: `test:lease:${convId}`, epoch: `test:epoch:${convId}` }),
      heartbeatKey: { before: 'test:instance:', after: ':alive' },
      registryKey: 'test:instances',
      running: () => running,
    });
    leasesOf.push(leases);
    return { leases, redis };
  };

  afterEach(async () => {
    for (const leases of leasesOf.splice(0)) await leases.dispose();
    for (const client of clients.splice(0)) client.disconnect();
    running = [];
  });

  it('should keep the lease of a run that starts while the lease of the run before is released', async () => {
    const { leases, redis } = start();
    expect(await leases.acquire('c1')).toBe(true);
    running = ['c1'];
    await leases.sync();
    // The run ended; the next /chat takes the lease again while a sync releases the ended one.
    running = [];
    const [again] = await Promise.all([leases.acquire('c1'), leases.sync()]);
    expect(again).toBe(true);
    const token = leases.tokenOf('c1');
    expect(token).toMatch(/^inst_a\/\d+$/);
    expect(await redis.get('test:lease:c1')).toBe(token);
  });

  it('should release the lease of a run that ended when nothing takes it again', async () => {
    const { leases, redis } = start();
    expect(await leases.acquire('c2')).toBe(true);
    running = ['c2'];
    await leases.sync();
    running = [];
    await leases.sync();
    expect(leases.tokenOf('c2')).toBeUndefined();
    expect(await redis.get('test:lease:c2')).toBeNull();
  });
});
