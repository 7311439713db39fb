import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { createCommitQueue } from '../../src/streams/commit-queue.js';
import { createEventHub, type EventHub } from '../../src/streams/event-hub.js';
import type { SequencedEvent, StepwiseEvent } from '../../src/streams/events.js';
import type { Store } from '../../src/core/store.js';

const log = (conv_id: string, message: string): StepwiseEvent => ({
  type: 'log', level: 'info', message, conv_id, session_id: 's', inference_id: 'i', turn_id: 't', at: 0,
});

/** The hub's items pushed into a commit queue from one subscription, as the frame log does: each passed on once committed. */
function commitFrom(
  hub: EventHub,
  store: Pick<Store, 'appendFrames'>,
  committed: (item: SequencedEvent) => void,
  failed: (error: unknown, item: SequencedEvent) => void = () => {},
): { unsubscribe(): void } {
  const queue = createCommitQueue(store, { committed, failed });
  const source = hub.events$.subscribe((item) => queue.push(item));
  return {
    unsubscribe: () => {
      queue.close();
      source.unsubscribe();
    },
  };
}

describe('commit queue (hub -> store -> fan-out)', () => {
  const dirs: string[] = [];
  const stores: Store[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const sqlite = (dir = mkdtempSync(join(tmpdir(), 'stepwise-committed-'))): Store => {
    if (!dirs.includes(dir)) dirs.push(dir);
    const store = createSqliteStore({ dataDir: dir });
    stores.push(store);
    return store;
  };

  it('emits each item only once its frame is in the SQLite store, in hub order', async () => {
    const store = sqlite();
    const hub = createEventHub();
    const seen: number[] = [];
    const done = new Promise<void>((resolve) => {
      commitFrom(hub, store, (item) => {
        seen.push(item.seq);
        if (item.seq === 5) resolve();
      });
    });
    for (let n = 1; n <= 5; n += 1) hub.publish(log('c', `m${n}`));
    expect(seen).toEqual([]); // nothing fanned out before the batch commits
    await done;
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    // The store holds its file exclusively (one process per data dir), so it is read through the store.
    expect((await store.frames('c')).frames.map((f) => f.seq)).toEqual([1, 2, 3, 4, 5]);
  });

  it('reports every item of a batch that failed to commit, and delivers none of them', async () => {
    const store = sqlite();
    const hub = createEventHub();
    const seen: number[] = [];
    const failed: number[] = [];
    commitFrom(hub, store, (item) => seen.push(item.seq), (_error, item) => failed.push(item.seq));
    hub.publish(log('c', 'm1'));
    // A conversation row without its NOT NULL created_at: the batch of all three frames rolls back.
    store.putConversation({ conv_id: 'c', session_id: 's', created_at: null as unknown as number, step: { enabled: false } });
    hub.publish(log('c', 'm2'));
    hub.publish(log('c', 'm3'));
    await store.flush().catch(() => undefined);
    expect(failed).toEqual([1, 2, 3]);
    expect(seen).toEqual([]);
    expect(await store.lastSeq('c')).toBe(0);
  });

  it('with the memory store, items pass synchronously', () => {
    const hub = createEventHub();
    const seen: number[] = [];
    commitFrom(hub, createMemoryStore(), (item) => seen.push(item.seq));
    hub.publish(log('c', 'a'));
    expect(seen).toEqual([1]);
  });

  it('a seeded hub continues the stored log after a restart; a failed append is reported, not delivered', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-committed-'));
    const first = sqlite(dir);
    first.appendFrames([1, 2, 3].map((seq) => ({ seq, event: log('c', `m${seq}`) })));
    await first.close();
    stores.splice(stores.indexOf(first), 1);
    const store = sqlite(dir);
    const hub = createEventHub();
    hub.seed('c', await store.lastSeq('c'));
    const errors: unknown[] = [];
    const sub = commitFrom(hub, store, () => {}, (e) => errors.push(e));
    expect(hub.publish(log('c', 'after restart')).seq).toBe(4);
    expect(() => hub.seed('c', 2)).toThrow(RangeError);
    const unseeded = createEventHub();
    const bad: unknown[] = [];
    const badSeen: number[] = [];
    commitFrom(unseeded, store, (i) => badSeen.push(i.seq), (e) => bad.push(e));
    unseeded.publish(log('c', 'reuses seq 1'));
    await store.flush().catch(() => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    expect(bad).toHaveLength(1);
    expect(badSeen).toEqual([]);
    await store.flush();
    expect((await store.frames('c')).frames.map((f) => f.seq)).toEqual([1, 2, 3, 4]);
    sub.unsubscribe();
    expect(errors).toEqual([]);
  });
});
