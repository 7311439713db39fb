import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom, take, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreSequenceError } from '../../src/core/store-errors.js';
import { createRedisKeys } from '../../src/store/redis/keys.js';
import { createRedisStore, type RedisStore } from '../../src/store/redis/redis-store.js';
import { defineScripts } from '../../src/store/redis/scripts.js';
import { appendReply, queueBatch } from '../../src/store/redis/writes.js';
import { resolveRetention } from '../../src/store/retention.js';
import type { WriteOp } from '../../src/store/write-ops.js';
import { until } from '../durable/helpers.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { checkpoint, conversation, decision, frames, pause, type TestEvent } from './fixtures.js';

const redis = useRedisServer();

describe('redis store: instances sharing one Redis', () => {
  const opened: RedisStore<TestEvent>[] = [];
  const clients: Redis[] = [];
  let keyPrefix = '';
  /** A store on this test's prefix: two of them are two instances of one service. */
  const open = (): RedisStore<TestEvent> => {
    const store = createRedisStore<TestEvent>({ url: redis().url, keyPrefix });
    opened.push(store);
    return store;
  };
  const appended = (store: RedisStore<TestEvent>, from: number, to: number, conv = 'c1'): Promise<unknown> =>
    lastValueFrom(store.appendFrames(frames(conv, from, to)), { defaultValue: undefined });

  beforeEach(() => {
    keyPrefix = `shared-${randomUUID()}:`;
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    for (const client of clients.splice(0)) client.disconnect();
  });

  it("should refuse a fenced store's writes of a run unless its conversation's lease holds the writer's token", async () => {
    const tokens = new Map<string, string>();
    const refused: string[] = [];
    const a = open();
    const b = open();
    a.fence({ tokenOf: (convId) => tokens.get(convId), onRefused: (convId) => refused.push(convId) });
    const lease = createRedisKeys(keyPrefix).conversation('c1').lease;
    const client = new Redis(redis().url);
    clients.push(client);
    // No lease yet: a run's writes are refused (a run takes its lease before it writes).
    const unleased = await appended(a, 1, 1).catch((error: unknown) => error);
    expect(unleased).toMatchObject({ name: 'LeaseLostError', code: 'lease_lost', conv_id: 'c1' });
    expect(refused).toEqual(['c1']);
    // A holds it under inst_a/1: its writes go through.
    await client.set(lease, 'inst_a/1');
    tokens.set('c1', 'inst_a/1');
    a.putCheckpoint(checkpoint('c1', 'inf_1'));
    await appended(a, 1, 3);
    await expect(lastValueFrom(a.committed$('c1'), { defaultValue: 'done' })).resolves.toBe('done');
    // B took the run over under a new epoch: A, a zombie now, may append, checkpoint or end the run no more.
    await client.set(lease, 'inst_b/2');
    const zombie = await appended(a, 4, 4).catch((error: unknown) => error);
    expect(zombie).toMatchObject({ name: 'LeaseLostError', code: 'lease_lost', conv_id: 'c1' });
    a.putCheckpoint(checkpoint('c1', 'inf_1', { next: 'after_tools' }));
    a.deleteCheckpoint('c1', 'inf_1');
    a.putTurn('c1', { id: 't_zombie', blocks: [] });
    a.putPause(pause('c1', 'p_zombie'));
    a.recordDecision(decision('c1', 'p_zombie'));
    await a.flush();
    expect(refused.filter((convId) => convId === 'c1').length).toBeGreaterThanOrEqual(3);
    expect(await b.checkpoints('c1')).toEqual([checkpoint('c1', 'inf_1')]);
    expect(await b.turns('c1')).toEqual([]);
    expect(await b.pauses('c1')).toEqual([]);
    expect(await b.decisions('c1')).toEqual([]);
    // Once it knows it holds no token, what it waits on says so.
    tokens.delete('c1');
    await expect(lastValueFrom(a.committed$('c1'))).rejects.toMatchObject({ name: 'LeaseLostError', conv_id: 'c1' });
    // Its new owner goes on from seq 4: no gap, no duplicate.
    b.fence({ tokenOf: () => 'inst_b/2', onRefused: () => undefined });
    await appended(b, 4, 5);
    expect((await b.frames('c1')).frames.map((frame) => frame.seq)).toEqual([1, 2, 3, 4, 5]);
    // An unfenced store never reads leases.
    await appended(open(), 6, 6);
  });

  it("should see each other's writes", async () => {
    const a = open();
    const b = open();
    a.putConversation(conversation('c1', { owner: 'alice' }));
    a.putTurn('c1', { id: 't1', blocks: [] });
    a.putPause(pause('c1', 'p1'));
    a.putCheckpoint(checkpoint('c1', 'inf_1'));
    a.putEngineState('c1', { cursor: 1 });
    await appended(a, 1, 3);
    expect(await b.conversations('alice')).toEqual([conversation('c1', { owner: 'alice' })]);
    expect(await b.frames('c1')).toEqual({ frames: frames('c1', 1, 3), last_seq: 3 });
    expect(await b.load()).toEqual({
      conversations: [{ ...conversation('c1', { owner: 'alice' }), turns: [{ id: 't1', blocks: [] }], last_seq: 3, engine_state: { cursor: 1 } }],
      pauses: [pause('c1', 'p1')],
      checkpoints: [checkpoint('c1', 'inf_1')],
    });
    b.setStep('c1', { enabled: true });
    b.recordDecision(decision('c1', 'p1'));
    await b.flush();
    expect((await a.conversation('c1'))?.step).toEqual({ enabled: true });
    expect(await a.pauses()).toEqual([]);
    expect(await a.decisions('c1')).toEqual([decision('c1', 'p1')]);
  });

  it("should find a pause's conversation at once, not after this instance's queued writes (a command's way to the run's owner)", async () => {
    const a = open();
    const b = open();
    a.putPause(pause('c1', 'p1'));
    await a.flush();
    b.putPause(pause('c2', 'p2'));
    // Asked before b's batch commits: another instance's pause is found, b's own queued one not yet (its controller knows it).
    const [other, own] = await Promise.all([b.convOfPause('p1'), b.convOfPause('p2')]);
    expect([other, own]).toEqual(['c1', undefined]);
    await b.flush();
    expect(await b.convOfPause('p2')).toBe('c2');
    expect(await b.convOfPause('p404')).toBeUndefined();
  });

  it("should continue another instance's log, and refuse an append that does not (Redis checks, not the cache)", async () => {
    const a = open();
    const b = open();
    await appended(a, 1, 3);
    // B has never seen c1: Redis checks its first append against the stored last seq.
    await expect(appended(b, 3, 4)).rejects.toMatchObject({ name: 'StoreSequenceError', conv_id: 'c1', expected: 4, got: 3 });
    await appended(b, 4, 6);
    // A believes 3 is the last: its next append is refused by Redis, and A follows Redis from then on.
    const stale = appended(a, 4, 4);
    await expect(stale).rejects.toBeInstanceOf(StoreSequenceError);
    await expect(stale).rejects.toThrow('frame seq 4 where 7 was next');
    await appended(a, 7, 8);
    expect((await b.frames('c1')).frames).toEqual(frames('c1', 1, 8));
  });

  it('should decide each append of one batch on its own: a refused one writes nothing and fails alone', async () => {
    const a = open();
    const b = open();
    await appended(a, 1, 3);
    // One tick: one MULTI, one script call for the three appends; B has never seen c1, so Redis checks.
    const refused = appended(b, 5, 5);
    const second = appended(b, 1, 2, 'c2');
    const third = lastValueFrom(b.appendFrames([...frames('c3', 1, 1), ...frames('c2', 3, 3)]), { defaultValue: 'committed' });
    await expect(refused).rejects.toMatchObject({ name: 'StoreSequenceError', conv_id: 'c1', expected: 4, got: 5 });
    await expect(second).resolves.toBeUndefined();
    await expect(third).resolves.toBe('committed');
    expect((await a.frames('c1')).frames).toEqual(frames('c1', 1, 3));
    expect((await a.frames('c2')).frames).toEqual(frames('c2', 1, 3));
    expect(await a.lastSeq('c3')).toBe(1);
    // B follows Redis from then on, for every conversation of a refused append.
    await appended(b, 4, 4);
    // A third instance knows neither c4 nor c1: Redis refuses its append for c1's sake, and c4 is not written.
    const c = open();
    await expect(lastValueFrom(c.appendFrames([...frames('c4', 1, 1), ...frames('c1', 9, 9)]))).rejects.toThrow('frame seq 9 where 5 was next');
    expect(await a.lastSeq('c4')).toBe(0);
    await appended(c, 1, 1, 'c4');
    expect(await a.lastSeq('c4')).toBe(1);
  });

  it("should tail another instance's frames in order, each once, from since_seq on", async () => {
    const a = open();
    const b = open();
    await appended(a, 1, 3);
    const fromStart = lastValueFrom(b.tail$('c1').pipe(take(8), toArray()));
    const fromTwo = lastValueFrom(b.tail$('c1', 2).pipe(take(6), toArray()));
    // Written while the tails wait on their blocked reads, in batches of several sizes.
    await appended(a, 4, 4);
    await appended(a, 5, 7);
    a.appendFrames(frames('c1', 8, 8));
    expect(await fromStart).toEqual(frames('c1', 1, 8));
    expect(await fromTwo).toEqual(frames('c1', 3, 8));
  });

  it('should wait for a conversation that has no frame yet, and end its tails at close', async () => {
    const a = open();
    const b = open();
    const seen: number[] = [];
    let completed = false;
    b.tail$('c9').subscribe({ next: (frame) => seen.push(frame.seq), complete: () => (completed = true) });
    const first = firstValueFrom(b.tail$('c9'));
    await appended(a, 1, 2, 'c9');
    expect(await first).toEqual(frames('c9', 1, 1)[0]);
    // Each tail reads on its own connection: the other one may get its reply a little later.
    await until(async () => seen.length, (count) => count >= 2);
    await b.close();
    expect(completed).toBe(true);
    expect(seen).toEqual([1, 2]);
  });

  it('should apply a batch sent again after a lost reply once (frames, turns, decisions)', async () => {
    const keys = createRedisKeys(keyPrefix);
    const client = new Redis(redis().url);
    clients.push(client);
    defineScripts(client);
    const batch: WriteOp[] = [
      { kind: 'turn', conv_id: 'c1', turn: { id: 't1', blocks: [] } },
      { kind: 'pause', pause: pause('c1', 'p1') },
      { kind: 'decision', decision: decision('c1', 'p1') },
      { kind: 'frames', frames: frames('c1', 1, 2) },
    ];
    const send = async (retry: boolean): Promise<unknown[]> => {
      const multi = client.multi();
      const { appends } = queueBatch(multi, keys, resolveRetention({}, 'test'), batch, retry, () => '');
      const replies = (await multi.exec()) ?? [];
      return appends.map((append) => appendReply(append, replies)[1]);
    };
    expect(await send(false)).toEqual([[0, 0]]);
    expect(await send(true)).toEqual([[0, 0]]);
    // Sent again without the retry mark, the same frames are a reused seq.
    expect(await send(false)).toEqual([[1, 3]]);
    const store = open();
    expect(await store.turns('c1')).toEqual([{ id: 't1', blocks: [] }]);
    expect(await store.decisions('c1')).toEqual([decision('c1', 'p1')]);
    expect(await store.frames('c1')).toEqual({ frames: frames('c1', 1, 2), last_seq: 2 });
  });

  it('should keep prefixes apart', async () => {
    const a = open();
    a.putConversation(conversation('c1'));
    await appended(a, 1, 1);
    const other = createRedisStore<TestEvent>({ url: redis().url, keyPrefix: `${keyPrefix}other:` });
    opened.push(other);
    expect(await other.conversations()).toEqual([]);
    expect(await other.lastSeq('c1')).toBe(0);
  });

  it('should refuse bad options by name', () => {
    expect(() => createRedisStore({ url: 'http://localhost:6379' })).toThrow('createRedisStore: url must start with redis:// or rediss://, got "http://localhost:6379"');
    expect(() => createRedisStore({ url: redis().url, retryMs: -1 })).toThrow('createRedisStore: retryMs must be an integer >= 0, got -1');
    expect(() => createRedisStore({ url: redis().url, maxFramesPerConversation: 0 })).toThrow(/maxFramesPerConversation must be a positive integer/);
  });
});

describe('redis store: pending pauses by deadline', () => {
  it('should page the pending pauses soonest first, drop decided ones, and index pauses stored before the index existed', async () => {
    const keyPrefix = `deadlines-${randomUUID()}:`;
    const store = createRedisStore<TestEvent>({ url: redis().url, keyPrefix });
    const deadlines = [30, 10, 20, 10, 50];
    deadlines.forEach((_, i) => store.putConversation(conversation(`c${i}`)));
    deadlines.forEach((at, i) => store.putPause(pause(`c${i}`, `p${i}`, { deadline_ms: 1_700_000_000_000 + at })));
    store.recordDecision(decision('c4', 'p4'));
    await store.flush();
    // Equal deadlines: by pause id.
    const ids = async (offset: number, count: number) => (await store.pausesByDeadline(offset, count)).pauses.map((listed) => listed.pause.pause_id);
    expect(await ids(0, 2)).toEqual(['p1', 'p3']);
    expect(await ids(2, 2)).toEqual(['p2', 'p0']);
    expect(await store.pausesByDeadline(4, 2)).toEqual({ pauses: [], ended: true });
    expect((await store.pausesByDeadline(2, 2)).ended).toBe(false);
    await store.close();

    // The index gone (a Redis written by an older version): the next store builds it from the pauses.
    const client = new Redis(redis().url);
    await client.del(createRedisKeys(keyPrefix).pauseDeadlines);
    client.disconnect();
    const again = createRedisStore<TestEvent>({ url: redis().url, keyPrefix });
    const page = await again.pausesByDeadline(0, 10);
    expect(page.pauses.map((listed) => listed.pause.pause_id)).toEqual(['p1', 'p3', 'p2', 'p0']);
    expect(page.pauses[0]!.record).toMatchObject({ conv_id: 'c1' });
    await again.close();
  });
});
