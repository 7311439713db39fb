import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/core/store.js';
import type { Block } from '../../src/core/turns.js';
import { createSqliteStore, STORE_FILE } from '../../src/store/sqlite/sqlite-store.js';
import { useTempDir, type TestEvent } from './fixtures.js';

const block = (id: string): Block => ({ id, kind: 'llm_text', role: 'assistant', payload: { text: id } });

describe('sqlite store: a long turn', () => {
  const dirOf = useTempDir();
  const stores: Store<TestEvent>[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });
  const open = (dir: string): Store<TestEvent> => {
    const store = createSqliteStore<TestEvent>({ dataDir: dir });
    stores.push(store);
    return store;
  };
  const rows = (dir: string): { whole: number; segments: { start: number; length: number }[] } => {
    const db = new Database(join(dir, STORE_FILE), { readonly: true });
    const whole = db.prepare(`SELECT blocks FROM turns WHERE turn_id = 't'`).pluck().get() as string;
    const segments = db.prepare(`SELECT start, blocks FROM turn_blocks WHERE turn_id = 't' ORDER BY start`).all() as { start: number; blocks: string }[];
    db.close();
    const length = (json: string): number => (JSON.parse(json) as unknown[]).length;
    return { whole: length(whole), segments: segments.map((row) => ({ start: row.start, length: length(row.blocks) })) };
  };

  it('should never write a growing turn whole again: each write stores what it added, merged every sixteen writes', async () => {
    const dir = dirOf();
    const store = open(dir);
    const blocks: Block[] = [];
    for (let i = 0; i < 50; i += 1) {
      blocks.push(block(`b${i}`));
      store.putTurn('c1', { id: 't', blocks: [...blocks] });
      await store.flush();
    }
    expect(await store.turns('c1')).toEqual([{ id: 't', blocks }]);
    await store.close();
    const { whole, segments } = rows(dir);
    expect(whole).toBe(1);
    // Writes 2-16 merged by the 17th, 18-32 by the 33rd, 34-48 by the 49th; the 50th on its own.
    expect(segments).toEqual([
      { start: 1, length: 16 },
      { start: 17, length: 16 },
      { start: 33, length: 16 },
      { start: 49, length: 1 },
    ]);
    expect(await open(dir).turns('c1')).toEqual([{ id: 't', blocks }]);
  });

  it('should read back a turn edited before, inside and after its merged segments, and truncated', async () => {
    const dir = dirOf();
    const store = open(dir);
    let blocks: Block[] = [];
    const write = async (next: Block[]): Promise<void> => {
      blocks = next;
      store.putTurn('c1', { id: 't', blocks });
      await store.flush();
      expect(await store.turns('c1')).toEqual([{ id: 't', blocks }]);
    };
    for (let i = 0; i < 40; i += 1) await write([...blocks, block(`b${i}`)]);
    // An edit inside the second merged segment, then appends past the next merge.
    await write(blocks.map((b, i) => (i === 20 ? block('edited 20') : b)));
    for (let i = 40; i < 60; i += 1) await write([...blocks, block(`b${i}`)]);
    // An edit in the tail, a truncation into the first merged segment, an edit of the first block.
    await write(blocks.map((b, i) => (i === 58 ? block('edited 58') : b)));
    await write([...blocks.slice(0, 10), block('after truncation')]);
    await write([block('edited 0'), ...blocks.slice(1)]);
    for (let i = 0; i < 20; i += 1) await write([...blocks, block(`c${i}`)]);
    await store.close();
    expect(await open(dir).turns('c1')).toEqual([{ id: 't', blocks }]);
  });
});
