import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastValueFrom } from 'rxjs';
import { DEFAULT_MEMORY_FRAMES_PER_CONVERSATION, openStore, type StoreKind } from '../../src/store/open-store.js';
import { STORE_FILE } from '../../src/store/sqlite/sqlite-store.js';
import { frames, useTempDir } from './fixtures.js';

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

  it('should keep the newest 1000 frames per conversation in a memory store unless told otherwise', async () => {
    const bounded = openStore({ kind: 'memory' });
    const unbounded = openStore({ kind: 'memory', maxFramesPerConversation: 5000 });
    for (const store of [bounded, unbounded]) await lastValueFrom(store.appendFrames(frames('c1', 1, 3000)), { defaultValue: undefined });
    const kept = await bounded.frames('c1', { limit: 5000 });
    expect(DEFAULT_MEMORY_FRAMES_PER_CONVERSATION).toBe(1000);
    expect(kept.last_seq).toBe(3000);
    expect(kept.frames.length).toBeGreaterThanOrEqual(1000);
    expect(kept.frames.length).toBeLessThanOrEqual(1250);
    expect(kept.frames.at(-1)?.seq).toBe(3000);
    expect((await unbounded.frames('c1', { limit: 5000 })).frames).toHaveLength(3000);
    await Promise.all([bounded.close(), unbounded.close()]);
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
