import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/core/store.js';
import { createFirstInTurn } from '../../src/store/first-in-turn.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { checkpoint, conversation, useTempDir, type TestEvent } from './fixtures.js';

/** Whether `committed$` completed before the caller's code went on (a transaction of its own, at once). */
function watch(store: Store<TestEvent>, convId: string): { readonly done: () => boolean; readonly at: Promise<void> } {
  let done = false;
  const at = new Promise<void>((resolve, reject) =>
    store.committed$(convId).subscribe({ complete: () => ((done = true), resolve()), error: reject }),
  );
  return { done: () => done, at };
}

describe('first in turn', () => {
  it('should say true to the first key of a turn and its later calls, false to other keys until the turn ends', () => {
    const ends: (() => void)[] = [];
    const firstInTurn = createFirstInTurn((task) => void ends.push(task));
    expect([firstInTurn('a'), firstInTurn('a'), firstInTurn('b'), firstInTurn('a')]).toEqual([true, true, false, true]);
    expect(ends).toHaveLength(1);
    ends.shift()?.();
    expect([firstInTurn('b'), firstInTurn('a')]).toEqual([true, false]);
  });
});

describe('sqlite store: waiters on a commit', () => {
  const dirOf = useTempDir();
  const stores: Store<TestEvent>[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });
  const open = (): Store<TestEvent> => {
    const store = createSqliteStore<TestEvent>({ dataDir: dirOf() });
    stores.push(store);
    return store;
  };

  it('should commit a lone run at once, each of its waits, so its tool starts in the same tick', () => {
    const store = open();
    store.putConversation(conversation('c1'));
    for (let step = 1; step <= 3; step += 1) {
      store.putCheckpoint(checkpoint('c1', `inf_${step}`));
      expect(watch(store, 'c1').done()).toBe(true);
    }
  });

  it('should commit the other runs waiting in the same turn together at the end of the turn, every write of theirs stored', async () => {
    const store = open();
    const convIds = Array.from({ length: 50 }, (_, i) => `c${i}`);
    for (const convId of convIds) store.putConversation(conversation(convId));
    await store.flush();
    // As 50 runs whose engines answered in one turn: each records its tool's start, then waits for it.
    const waits = convIds.map((convId) => {
      store.putCheckpoint(checkpoint(convId, 'inf_1'));
      return watch(store, convId);
    });
    expect(waits.map((wait) => wait.done())).toEqual([true, ...convIds.slice(1).map(() => false)]);
    await Promise.all(waits.map((wait) => wait.at));
    for (const convId of convIds) expect((await store.checkpoints(convId)).map((c) => c.inference_id)).toEqual(['inf_1']);
  });

  it('should commit at once again in the next turn', async () => {
    const store = open();
    store.putConversation(conversation('a'));
    store.putConversation(conversation('b'));
    store.putCheckpoint(checkpoint('a', 'inf_1'));
    expect(watch(store, 'a').done()).toBe(true);
    store.putCheckpoint(checkpoint('b', 'inf_1'));
    const b = watch(store, 'b');
    expect(b.done()).toBe(false);
    await b.at;
    await new Promise((resolve) => setImmediate(resolve));
    store.putCheckpoint(checkpoint('b', 'inf_2'));
    expect(watch(store, 'b').done()).toBe(true);
  });
});
