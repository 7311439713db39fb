import { randomUUID } from 'node:crypto';
import { firstValueFrom } from 'rxjs';
import type { GrantRecord } from '../../src/core/grants.js';
import type { Store } from '../../src/core/store.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { createRedisStore } from '../../src/store/redis/redis-store.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { tempDir } from './fixtures.js';

const redisServer = useRedisServer();

/** Per adapter: a way to open the same store again (a restart), or none where nothing survives. */
const stores: Record<string, () => { readonly open: () => Store; readonly durable: boolean; readonly done: () => void }> = {
  memory: () => ({ open: () => createMemoryStore(), durable: false, done: () => undefined }),
  sqlite: () => {
    const temp = tempDir();
    return { open: () => createSqliteStore({ dataDir: temp.dir }), durable: true, done: temp.remove };
  },
  redis: () => {
    const keyPrefix = `grants-${randomUUID()}:`;
    return { open: () => createRedisStore({ url: redisServer().url, keyPrefix }), durable: true, done: () => undefined };
  },
};

const grant = (grant_id: string, created_at: number, more: Partial<GrantRecord> = {}): GrantRecord => ({ grant_id, scope: 'server', tools: ['echo'], by: 'alice', created_at, ...more });

describe.each(Object.keys(stores))('the grants of the %s store', (name) => {
  it('should keep grants oldest first, remove one by id, and keep them across a reopen when durable', async () => {
    const { open, durable, done } = stores[name]!();
    const store = open();
    const grants = store.grants!;
    await grants.put(grant('g2', 20, { scope: 'conversation', conv_id: 'c1', expires_at: 99, owner: 'alice' }));
    await grants.put(grant('g1', 10));
    expect((await firstValueFrom(grants.list$())).map((each) => each.grant_id)).toEqual(['g1', 'g2']);
    expect(await grants.remove('g1')).toBe(true);
    expect(await grants.remove('g1')).toBe(false);
    // A decision row written before digests and grants existed reads as it was.
    store.recordDecision({ conv_id: 'c1', pause_id: 'p1', phase: 'after_inference', inference_id: 'i1', reason: 'continued', by: 'alice', at_ms: 1 });
    await store.close();

    const again = open();
    const kept = await firstValueFrom(again.grants!.list$());
    expect(kept).toEqual(durable ? [grant('g2', 20, { scope: 'conversation', conv_id: 'c1', expires_at: 99, owner: 'alice' })] : []);
    if (durable) expect(await again.decisions('c1')).toEqual([{ conv_id: 'c1', pause_id: 'p1', phase: 'after_inference', inference_id: 'i1', reason: 'continued', by: 'alice', at_ms: 1 }]);
    await again.close();
    done();
  });
});
