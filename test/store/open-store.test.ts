import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore, type StoreKind } from '../../src/store/open-store.js';
import { STORE_FILE } from '../../src/store/sqlite/sqlite-store.js';
import { useTempDir } from './fixtures.js';

describe('openStore', () => {
  const dirOf = useTempDir();

  it('should open a durable SQLite store in the data dir by default', async () => {
    const store = openStore({ dataDir: join(dirOf(), 'data') });
    expect(store).toMatchObject({ kind: 'sqlite', durable: true });
    expect(existsSync(join(dirOf(), 'data', STORE_FILE))).toBe(true);
    await store.close();
  });

  it('should open a memory store that persists nothing', async () => {
    const store = openStore({ kind: 'memory' });
    expect(store).toMatchObject({ kind: 'memory', durable: false });
    await store.close();
  });

  it('should open a durable Redis store that reports an unreachable Redis at its first read', async () => {
    const store = openStore({ kind: 'redis', redisUrl: 'redis://127.0.0.1:1' });
    expect(store).toMatchObject({ kind: 'redis', durable: true });
    await expect(store.load()).rejects.toMatchObject({ name: 'StoreUnavailableError', code: 'store_unavailable' });
    await store.close();
  });

  it('should refuse kinds it does not have, by name', () => {
    expect(() => openStore({ kind: 'mongo' as StoreKind })).toThrow('openStore: kind must be one of memory, sqlite, redis, got "mongo"');
  });
});
