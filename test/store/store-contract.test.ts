import { randomUUID } from 'node:crypto';
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Store, type StoreRetentionConfig } from '../../src/core/store.js';
import { StoreClosedError, StoreSequenceError } from '../../src/core/store-errors.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { createRedisStore } from '../../src/store/redis/redis-store.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { checkpoint, conversation, decision, frames, pause, tempDir, type TestEvent } from './fixtures.js';

type Open = (config?: StoreRetentionConfig) => Store<TestEvent>;

const redisServer = useRedisServer();

/** Each adapter, opened fresh for every case; sqlite on a real file in a temporary dir, redis on a real redis-server. */
const adapters: readonly (readonly [string, () => { open: Open; cleanup: () => void }])[] = [
  ['memory', () => ({ open: (config = {}) => createMemoryStore<TestEvent>(config), cleanup: () => undefined })],
  [
    'sqlite',
    () => {
      const temp = tempDir();
      return { open: (config = {}) => createSqliteStore<TestEvent>({ dataDir: temp.dir, ...config }), cleanup: temp.remove };
    },
  ],
  [
    'redis',
    () => {
      // One real redis-server for the file; a key prefix of its own for each case.
      const keyPrefix = `contract-${randomUUID()}:`;
      return { open: (config = {}) => createRedisStore<TestEvent>({ url: redisServer().url, keyPrefix, ...config }), cleanup: () => undefined };
    },
  ],
];

/** Resolves once the append's Observable completes; rejects with its error. */
const committed = (store: Store<TestEvent>, batch: Parameters<Store<TestEvent>['appendFrames']>[0]): Promise<unknown[]> =>
  lastValueFrom(store.appendFrames(batch).pipe(toArray()));

describe.each(adapters)('store contract: %s', (_name, setup) => {
  let open: Open;
  let cleanup: () => void;
  let store: Store<TestEvent>;
  const opened: Store<TestEvent>[] = [];

  beforeEach(() => {
    ({ open, cleanup } = setup());
    store = open();
    opened.push(store);
  });
  afterEach(async () => {
    for (const each of opened.splice(0)) await each.close();
    cleanup();
  });

  it('should keep conversations, oldest first, filtered by owner', async () => {
    store.putConversation(conversation('c2', { created_at: 2, owner: 'bob', profile: 'support' }));
    store.putConversation(conversation('c1', { created_at: 1, owner: 'alice', forked_from: { conv_id: 'c0', turn_id: 't1' } }));
    expect((await store.conversations()).map((c) => c.conv_id)).toEqual(['c1', 'c2']);
    expect(await store.conversations('bob')).toEqual([conversation('c2', { created_at: 2, owner: 'bob', profile: 'support' })]);
    expect(await store.conversation('c1')).toEqual(conversation('c1', { created_at: 1, owner: 'alice', forked_from: { conv_id: 'c0', turn_id: 't1' } }));
    expect(await store.conversation('nope')).toBeUndefined();
  });

  it('should switch step mode and its filter', async () => {
    store.putConversation(conversation('c1'));
    store.setStep('c1', { enabled: true, filter: { tools: ['echo'], phases: ['after_tools'] } });
    expect((await store.conversation('c1'))?.step).toEqual({ enabled: true, filter: { tools: ['echo'], phases: ['after_tools'] } });
    store.setStep('c1', { enabled: false });
    expect((await store.conversation('c1'))?.step).toEqual({ enabled: false });
  });

  it('should append turns in order and replace the blocks of the running one in place', async () => {
    const user = { id: 'u1', kind: 'user', role: 'user', payload: { text: 'hi' } } as const;
    const text = { id: 'x1', kind: 'llm_text', role: 'assistant', payload: { text: 'hello' } } as const;
    store.putTurn('c1', { id: 't1', blocks: [user] });
    store.putTurn('c1', { id: 't2', blocks: [user] });
    store.putTurn('c1', { id: 't1', blocks: [user, text] });
    expect(await store.turns('c1')).toEqual([
      { id: 't1', blocks: [user, text] },
      { id: 't2', blocks: [user] },
    ]);
    expect(await store.turns('other')).toEqual([]);
  });

  // A tool's result reaches the store as JSON data (the executor converts it), but a library user can
  // publish or write anything: a durable store commits it as JSON makes it and fails nothing else in
  // the batch; the memory store keeps values by reference, as they are.
  it('should commit values JSON cannot say, as JSON makes them when durable, failing nothing else in the batch', async () => {
    const cycle: Record<string, unknown> = { name: 'o' };
    cycle['self'] = cycle;
    const odd = { id: 'u1', kind: 'tool_use', role: 'tool', payload: { id: 'call_1', result: { n: 10n, cycle } } } as const;
    const asStored = store.durable ? { ...odd, payload: { id: 'call_1', result: { n: '10', cycle: { name: 'o', self: '[circular]' } } } } : odd;
    const [first] = frames('c1', 1, 1);
    store.putTurn('c1', { id: 't1', blocks: [odd] });
    store.putCheckpoint(checkpoint('c1', 'inf_1', { blocks: [odd] }));
    await committed(store, [{ seq: 1, event: { ...(first as (typeof first & object)).event, delta: 10n as unknown as string } }, ...frames('c1', 2, 3)]);
    expect(await store.turns('c1')).toEqual([{ id: 't1', blocks: [asStored] }]);
    expect((await store.checkpoints('c1'))[0]?.blocks).toEqual([asStored]);
    expect((await store.frames('c1')).frames.map((f) => f.event.delta)).toEqual([store.durable ? '10' : 10n, 'd2', 'd3']);
  });

  it('should complete an append once committed, and read frames after since_seq, page by page', async () => {
    expect(await committed(store, frames('c1', 1, 5))).toEqual([]);
    await committed(store, [...frames('c1', 6, 7), ...frames('c2', 1, 2)]);
    expect(await store.lastSeq('c1')).toBe(7);
    expect(await store.lastSeq('c2')).toBe(2);
    expect(await store.lastSeq('none')).toBe(0);
    expect(await store.frames('c1')).toEqual({ frames: frames('c1', 1, 7), last_seq: 7 });
    const first = await store.frames('c1', { since_seq: 2, limit: 3 });
    expect(first).toEqual({ frames: frames('c1', 3, 5), last_seq: 7 });
    expect(await store.frames('c1', { since_seq: 5, limit: 3 })).toEqual({ frames: frames('c1', 6, 7), last_seq: 7 });
    expect(await store.frames('c1', { since_seq: 7 })).toEqual({ frames: [], last_seq: 7 });
    expect(await store.frames('none')).toEqual({ frames: [], last_seq: 0 });
  });

  it('should complete appends in the order they were made, so frames can be fanned out in seq order', async () => {
    const completed: number[] = [];
    for (let seq = 1; seq <= 5; seq += 1) {
      store.appendFrames(frames(seq % 2 === 0 ? 'c2' : 'c1', Math.ceil(seq / 2), Math.ceil(seq / 2))).subscribe({ complete: () => completed.push(seq) });
    }
    await store.flush();
    expect(completed).toEqual([1, 2, 3, 4, 5]);
  });

  it('should refuse a seq that is reused or skipped, writing nothing of that append', async () => {
    await committed(store, frames('c1', 1, 3));
    const reuse = committed(store, [...frames('c2', 1, 1), ...frames('c1', 3, 4)]);
    await expect(reuse).rejects.toBeInstanceOf(StoreSequenceError);
    await expect(reuse).rejects.toMatchObject({ code: 'store_sequence', conv_id: 'c1', expected: 4, got: 3 });
    await expect(committed(store, frames('c1', 5, 5))).rejects.toThrow('frame seq 5 where 4 was next');
    await expect(committed(store, frames('c9', 2, 2))).rejects.toThrow('frame seq 2 where 1 was next');
    expect(await store.lastSeq('c2')).toBe(0);
    await committed(store, frames('c1', 4, 4));
    expect((await store.frames('c1')).frames).toEqual(frames('c1', 1, 4));
  });

  it('should keep pending pauses until a decision resolves them, and decisions oldest first', async () => {
    store.putPause(pause('c1', 'p1'));
    store.putPause(pause('c1', 'p2', { phase: 'after_tools', tool_calls: [] }));
    store.putPause(pause('c2', 'p3'));
    expect((await store.pauses('c1')).map((p) => p.pause_id)).toEqual(['p1', 'p2']);
    expect(await store.pauses()).toHaveLength(3);
    const edited = decision('c1', 'p1');
    const denied = decision('c1', 'p2', { reason: 'denied', tool_call_ids: ['call_1'], message: 'no', by: 'system' });
    store.recordDecision(edited);
    store.recordDecision(denied);
    expect(await store.pauses('c1')).toEqual([]);
    expect(await store.pauses()).toEqual([pause('c2', 'p3')]);
    expect(await store.decisions('c1')).toEqual([edited, denied]);
    expect(await store.decisions('c2')).toEqual([]);
  });

  it('should keep one checkpoint per run, the latest, until it is deleted', async () => {
    store.putCheckpoint(checkpoint('c1', 'inf_1'));
    const later = checkpoint('c1', 'inf_1', {
      next: 'tools',
      decision: { action: 'edit', edits: { call_1: { text: 'x' } } },
      running_tool_call_ids: ['call_1'],
    });
    store.putCheckpoint(later);
    store.putCheckpoint(checkpoint('c2', 'inf_9'));
    expect(await store.checkpoints('c1')).toEqual([later]);
    expect(await store.checkpoints()).toHaveLength(2);
    store.deleteCheckpoint('c1', 'inf_1');
    expect(await store.checkpoints('c1')).toEqual([]);
  });

  it("should keep a resolved pause on its run's checkpoint, committed with its decision, until the run's next checkpoint", async () => {
    const atPause = checkpoint('c1', 'inf_1', {
      blocks: [{ id: 'b2', kind: 'tool_call', role: 'assistant', payload: { id: 'call_1', name: 'echo', args: { text: 'é "q" \\ }', n: 1.5e-7, none: [] } } }],
    });
    const resolved = { pause_id: 'p1', decision: { action: 'edit', edits: { call_1: { text: 'x', list: [] } } } } as const;
    store.putCheckpoint(atPause);
    store.putCheckpoint(checkpoint('c2', 'inf_1'));
    store.putPause(pause('c1', 'p1'));
    await store.flush();
    store.recordDecision(decision('c1', 'p1'), resolved);
    // A decision of a run without a checkpoint (it ended), and one without a resolved pause, mark nothing.
    store.recordDecision(decision('c3', 'p3'), { pause_id: 'p3', decision: { action: 'continue' } });
    store.recordDecision(decision('c2', 'p2'));
    await store.flush();
    expect(await store.checkpoints('c1')).toEqual([{ ...atPause, resolved }]);
    expect(await store.checkpoints('c2')).toEqual([checkpoint('c2', 'inf_1')]);
    expect(await store.checkpoints('c3')).toEqual([]);
    expect((await store.load()).checkpoints).toContainEqual({ ...atPause, resolved });
    // In one batch, a checkpoint written after the decision is the run's last word, and has no resolved pause.
    const past = checkpoint('c2', 'inf_1', { next: 'tools', iteration: 2 });
    store.putCheckpoint(checkpoint('c2', 'inf_1', { iteration: 2 }));
    store.recordDecision(decision('c2', 'p4'), { pause_id: 'p4', decision: { action: 'continue' } });
    store.putCheckpoint(past);
    store.putCheckpoint(checkpoint('c1', 'inf_1', { next: 'tools' }));
    await store.flush();
    expect(await store.checkpoints('c2')).toEqual([past]);
    expect(await store.checkpoints('c1')).toEqual([checkpoint('c1', 'inf_1', { next: 'tools' })]);
  });

  it('should keep opaque engine state per conversation', async () => {
    expect(await store.engineState('c1')).toBeUndefined();
    store.putEngineState('c1', { cursor: 2, seen: ['a', null, true] });
    store.putEngineState('c1', { cursor: 3, seen: [] });
    expect(await store.engineState('c1')).toEqual({ cursor: 3, seen: [] });
  });

  it('should load everything a restart needs at once', async () => {
    store.putConversation(conversation('c1', { created_at: 1 }));
    store.putConversation(conversation('c2', { created_at: 2, step: { enabled: true } }));
    store.putTurn('c1', { id: 't1', blocks: [] });
    store.putEngineState('c2', { cursor: 1 });
    store.putPause(pause('c2', 'p1'));
    store.putCheckpoint(checkpoint('c2', 'inf_1'));
    await committed(store, frames('c1', 1, 4));
    expect(await store.load()).toEqual({
      conversations: [
        { ...conversation('c1', { created_at: 1 }), turns: [{ id: 't1', blocks: [] }], last_seq: 4 },
        { ...conversation('c2', { created_at: 2, step: { enabled: true } }), turns: [], last_seq: 0, engine_state: { cursor: 1 } },
      ],
      pauses: [pause('c2', 'p1')],
      checkpoints: [checkpoint('c2', 'inf_1')],
    });
  });

  it('should delete every row of a deleted conversation and no other', async () => {
    for (const id of ['c1', 'c2']) {
      store.putConversation(conversation(id));
      store.putTurn(id, { id: 't1', blocks: [] });
      store.putPause(pause(id, `p_${id}`));
      store.recordDecision(decision(id, `old_${id}`));
      store.putCheckpoint(checkpoint(id, 'inf_1'));
      store.putEngineState(id, 1);
      await committed(store, frames(id, 1, 3));
    }
    store.deleteConversation('c1');
    expect(await store.conversation('c1')).toBeUndefined();
    expect(await store.turns('c1')).toEqual([]);
    expect(await store.frames('c1')).toEqual({ frames: [], last_seq: 0 });
    expect(await store.pauses('c1')).toEqual([]);
    expect(await store.decisions('c1')).toEqual([]);
    expect(await store.checkpoints('c1')).toEqual([]);
    expect(await store.engineState('c1')).toBeUndefined();
    expect((await store.load()).conversations.map((c) => c.conv_id)).toEqual(['c2']);
    expect(await store.lastSeq('c2')).toBe(3);
    // The id can be used again: a new log from seq 1.
    await committed(store, frames('c1', 1, 1));
    expect(await store.lastSeq('c1')).toBe(1);
  });

  it('should keep at least the newest maxFramesPerConversation frames, and seq going on', async () => {
    await store.close();
    store = open({ maxFramesPerConversation: 8 });
    opened.push(store);
    for (let from = 1; from <= 100; from += 5) await committed(store, frames('c1', from, from + 4));
    const { frames: kept, last_seq } = await store.frames('c1');
    expect(last_seq).toBe(100);
    expect(kept.length).toBeGreaterThanOrEqual(8);
    expect(kept.length).toBeLessThanOrEqual(8 + 2 + 4);
    expect(kept).toEqual(frames('c1', 101 - kept.length, 100));
    await committed(store, frames('c1', 101, 101));
    expect(await store.lastSeq('c1')).toBe(101);
  });

  it('should refuse bad retention settings by name', () => {
    expect(() => open({ maxFramesPerConversation: 0 })).toThrow(/maxFramesPerConversation must be a positive integer/);
  });

  it('should flush, close idempotently, and refuse writes after close', async () => {
    store.putConversation(conversation('c1'));
    await store.flush();
    await store.close();
    await store.close();
    expect(() => store.putTurn('c1', { id: 't', blocks: [] })).toThrow(StoreClosedError);
    expect(() => store.appendFrames(frames('c1', 1, 1))).toThrow(StoreClosedError);
  });
});
