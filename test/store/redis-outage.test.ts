import { randomUUID } from 'node:crypto';
import { lastValueFrom } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/core/store-errors.js';
import { createRedisStore, type RedisStore, type RedisStoreConfig } from '../../src/store/redis/redis-store.js';
import { until } from '../durable/helpers.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { checkpoint, conversation, decision, frames, pause, type TestEvent } from './fixtures.js';

const redis = useRedisServer();

/** Stopping and starting a real redis-server (AOF on) under a store: docs/protocol.md, Several instances, "Redis away". */
describe('redis store: Redis stopped and started again', () => {
  const opened: RedisStore<TestEvent>[] = [];
  let keyPrefix = '';
  const open = (config: RedisStoreConfig = {}): RedisStore<TestEvent> => {
    const store = createRedisStore<TestEvent>({ url: redis().url, keyPrefix, ...config });
    opened.push(store);
    return store;
  };
  /** Resolves (or rejects) with the append's outcome, and says meanwhile whether it has settled. */
  const track = (append: ReturnType<RedisStore<TestEvent>['appendFrames']>): { done: Promise<unknown>; settled: () => boolean } => {
    let settled = false;
    const done = lastValueFrom(append, { defaultValue: 'committed' }).finally(() => (settled = true));
    done.catch(() => undefined);
    return { done, settled: () => settled };
  };

  beforeEach(() => {
    keyPrefix = `outage-${randomUUID()}:`;
  });
  afterEach(async () => {
    await redis().start();
    for (const store of opened.splice(0)) await store.close();
  });

  it('should keep everything across a restart of Redis (AOF), for a new store and the one that wrote it', async () => {
    const store = open();
    store.putConversation(conversation('c1', { created_at: 1 }));
    store.putConversation(conversation('c2', { created_at: 2, step: { enabled: true } }));
    store.putTurn('c1', { id: 't1', blocks: [] });
    store.putEngineState('c1', { cursor: 2 });
    store.putPause(pause('c2', 'p1'));
    store.putPause(pause('c2', 'p2'));
    store.recordDecision(decision('c2', 'p1'));
    store.putCheckpoint(checkpoint('c2', 'inf_1'));
    await lastValueFrom(store.appendFrames(frames('c1', 1, 5)), { defaultValue: undefined });
    const before = await store.load();
    expect(before.conversations).toHaveLength(2);

    await redis().restart();
    const fresh = open();
    expect(await fresh.load()).toEqual(before);
    expect(await fresh.frames('c1', { since_seq: 3 })).toEqual({ frames: frames('c1', 4, 5), last_seq: 5 });
    expect(await fresh.decisions('c2')).toEqual([decision('c2', 'p1')]);
    // The writer reconnects by itself and goes on from seq 6.
    expect(await until(() => store.load().catch((error: Error) => error.name), (value) => typeof value !== 'string')).toEqual(before);
    await lastValueFrom(store.appendFrames(frames('c1', 6, 6)), { defaultValue: undefined });
    expect(await fresh.lastSeq('c1')).toBe(6);
  }, 30_000);

  it('should fail reads and flush with store_unavailable while Redis is down, keep writes queued, and commit them when it is back', async () => {
    const store = open();
    const tailed: number[] = [];
    const tail = store.tail$('c1').subscribe((frame) => tailed.push(frame.seq));
    store.putConversation(conversation('c1'));
    await lastValueFrom(store.appendFrames(frames('c1', 1, 2)), { defaultValue: undefined });
    await until(async () => tailed.length, (count) => count === 2);

    await redis().stop();
    await expect(store.conversations()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.frames('c1')).rejects.toMatchObject({ code: 'store_unavailable', message: expect.stringContaining(`the redis store at ${redis().url} is unavailable`) });
    // Writes return at once and wait: the run goes on in memory.
    store.putTurn('c1', { id: 't1', blocks: [] });
    const append = track(store.appendFrames(frames('c1', 3, 4)));
    await expect(store.flush()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.lastSeq('c1')).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(append.settled()).toBe(false);
    expect(store.isAvailable()).toBe(false);

    await redis().start();
    expect(await append.done).toBe('committed');
    await until(() => store.flush().then(() => 'ok', (error: Error) => error.name), (value) => value === 'ok');
    expect(store.isAvailable()).toBe(true);
    expect(await store.turns('c1')).toEqual([{ id: 't1', blocks: [] }]);
    expect(await store.frames('c1')).toEqual({ frames: frames('c1', 1, 4), last_seq: 4 });
    // The tail picked up where it was: every frame once, in order.
    await until(async () => tailed.length, (count) => count >= 4);
    expect(tailed).toEqual([1, 2, 3, 4]);
    tail.unsubscribe();
  }, 30_000);

  it('should close within its close timeout while Redis is down, failing what could not be committed', async () => {
    const store = open({ closeTimeoutMs: 200 });
    await store.flush();
    await redis().stop();
    const append = track(store.appendFrames(frames('c1', 1, 1)));
    await store.close();
    await expect(append.done).rejects.toBeInstanceOf(StoreUnavailableError);
  }, 30_000);

  it('should say when Redis cannot be reached at all, without hanging', async () => {
    await redis().stop();
    const store = open();
    await expect(store.load()).rejects.toMatchObject({ name: 'StoreUnavailableError', message: expect.stringMatching(/ECONNREFUSED/) });
    await expect(store.flush()).rejects.toBeInstanceOf(StoreUnavailableError);
  }, 30_000);
});
