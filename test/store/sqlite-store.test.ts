import { existsSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { lastValueFrom } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Store } from '../../src/core/store.js';
import type { Block } from '../../src/core/turns.js';
import { StoreLockedError, StoreUnreadableError } from '../../src/core/store-errors.js';
import { LOCK_FILE } from '../../src/store/sqlite/lock-file.js';
import { LATEST_VERSION } from '../../src/store/sqlite/migrations.js';
import { createSqliteStore, STORE_FILE } from '../../src/store/sqlite/sqlite-store.js';
import { startStoreChild, type StoreChild } from './child-process.js';
import { checkpoint, conversation, decision, frames, pause, useTempDir, type TestEvent } from './fixtures.js';

const append = (store: Store<TestEvent>, batch: Parameters<Store<TestEvent>['appendFrames']>[0]): Promise<void> =>
  lastValueFrom(store.appendFrames(batch), { defaultValue: undefined });

describe('sqlite store', () => {
  const dirOf = useTempDir();
  let dir: string;
  const stores: Store<TestEvent>[] = [];
  const children: StoreChild[] = [];
  const open = (): Store<TestEvent> => {
    const store = createSqliteStore<TestEvent>({ dataDir: dir });
    stores.push(store);
    return store;
  };
  const file = (): string => join(dir, STORE_FILE);

  beforeEach(() => {
    dir = dirOf();
  });
  afterEach(async () => {
    for (const child of children.splice(0)) await child.kill('SIGKILL');
    for (const store of stores.splice(0)) await store.close();
  });

  /** A closed store with some of everything, its file checkpointed (no WAL beside it). */
  const seeded = async (frameCount = 20): Promise<void> => {
    const store = open();
    store.putConversation(conversation('c1', { owner: 'alice', step: { enabled: true, filter: { tools: ['echo'] } } }));
    store.putTurn('c1', { id: 't1', blocks: [{ id: 'u1', kind: 'user', role: 'user', payload: { text: 'hi' } }] });
    store.putPause(pause('c1', 'p2'));
    store.recordDecision(decision('c1', 'p1'));
    store.putCheckpoint(checkpoint('c1', 'inf_1', { resolved: { pause_id: 'p0', decision: { action: 'deny', reason: 'no', tool_call_ids: ['call_1'] } } }));
    store.putEngineState('c1', { cursor: 4 });
    for (let from = 1; from <= frameCount; from += 100) await append(store, frames('c1', from, Math.min(frameCount, from + 99)));
    await store.close();
  };

  it('should find everything again after close and reopen, with seq going on', async () => {
    await seeded();
    const store = open();
    const snapshot = await store.load();
    expect(snapshot.conversations).toEqual([
      {
        ...conversation('c1', { owner: 'alice', step: { enabled: true, filter: { tools: ['echo'] } } }),
        turns: [{ id: 't1', blocks: [{ id: 'u1', kind: 'user', role: 'user', payload: { text: 'hi' } }] }],
        last_seq: 20,
        engine_state: { cursor: 4 },
      },
    ]);
    expect(snapshot.pauses).toEqual([pause('c1', 'p2')]);
    expect(snapshot.checkpoints).toEqual([checkpoint('c1', 'inf_1', { resolved: { pause_id: 'p0', decision: { action: 'deny', reason: 'no', tool_call_ids: ['call_1'] } } })]);
    expect(await store.decisions('c1')).toEqual([decision('c1', 'p1')]);
    expect((await store.frames('c1')).frames).toEqual(frames('c1', 1, 20));
    await expect(append(store, frames('c1', 20, 20))).rejects.toThrow('frame seq 20 where 21 was next');
    await append(store, frames('c1', 21, 21));
    expect(await store.lastSeq('c1')).toBe(21);
  });

  it("should keep a checkpoint's blocks once, in its turn's row, when both are written from one array", async () => {
    const store = open();
    const user = { id: 'u1', kind: 'user', role: 'user', payload: { text: 'hi' } } as const;
    const call = { id: 'b2', kind: 'tool_call', role: 'assistant', payload: { id: 'call_1', name: 'echo', args: { text: 'hi' } } } as const;
    // What the runtime does at a phase boundary: the running turn and its checkpoint from one array.
    const running = [user, call];
    store.putConversation(conversation('c1'));
    store.putTurn('c1', { id: 'turn_1', blocks: running });
    store.putCheckpoint(checkpoint('c1', 'inf_1', { blocks: running }));
    // Another run's checkpoint whose blocks are not its turn's as written: they keep their own.
    store.putTurn('c2', { id: 'turn_1', blocks: [user] });
    store.putCheckpoint(checkpoint('c2', 'inf_2', { blocks: running }));
    const expected = [checkpoint('c1', 'inf_1', { blocks: running }), checkpoint('c2', 'inf_2', { blocks: running })];
    expect(await store.checkpoints()).toEqual(expected);
    expect(await store.checkpoints('c1')).toEqual([expected[0]]);
    await store.close();

    const db = new Database(file(), { readonly: true });
    const rows = db.prepare('SELECT conv_id, blocks IS NULL AS shared FROM checkpoints ORDER BY conv_id').all();
    db.close();
    expect(rows).toEqual([
      { conv_id: 'c1', shared: 1 },
      { conv_id: 'c2', shared: 0 },
    ]);
    const reopened = open();
    const snapshot = await reopened.load();
    expect(snapshot.checkpoints).toEqual(expected);
    // Copies: the recovered run may change its blocks without changing the turn it was read with.
    const turn = snapshot.conversations.find((c) => c.conv_id === 'c1')?.turns[0];
    expect(turn).toEqual({ id: 'turn_1', blocks: running });
    expect(snapshot.checkpoints[0]?.blocks).not.toBe(turn?.blocks);
    expect(await reopened.checkpoints('c1')).toEqual([expected[0]]);
  });

  it("should store what changed of a turn at each write, and read the turn back whole, before and after reopening", async () => {
    const store = open();
    const block = (id: string): Block => ({ id, kind: 'llm_text', role: 'assistant', payload: { text: id } });
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(block) as [Block, Block, Block, Block];
    const edited = { ...b, payload: { text: 'b, edited' } } as Block;
    // Each write its own batch, as phase boundaries are on a server: appends, an edit, a truncation, an append.
    const writes: Block[][] = [[a], [a, b], [a, b, c], [a, edited, c], [a], [a, d]];
    for (const blocks of writes) {
      store.putTurn('c1', { id: 't1', blocks });
      await store.flush();
      expect(await store.turns('c1')).toEqual([{ id: 't1', blocks }]);
    }
    // A second turn, written twenty times: its segments are gathered into one before they pile up.
    const many: Block[] = [];
    for (let i = 0; i < 20; i += 1) {
      many.push(block(`m${i}`));
      store.putTurn('c1', { id: 't2', blocks: [...many] });
      await store.flush();
    }
    const expected = [
      { id: 't1', blocks: [a, d] },
      { id: 't2', blocks: many },
    ];
    expect(await store.turns('c1')).toEqual(expected);
    await store.close();

    const db = new Database(file(), { readonly: true });
    const segments = db.prepare(`SELECT turn_id, start, blocks FROM turn_blocks WHERE conv_id = 'c1' ORDER BY turn_id, start`).all() as { turn_id: string; start: number; blocks: string }[];
    const wholes = db.prepare(`SELECT turn_id, blocks FROM turns WHERE conv_id = 'c1' ORDER BY ord`).all() as { turn_id: string; blocks: string }[];
    db.close();
    const lengths = (rows: { blocks: string }[]): number[] => rows.map((row) => (JSON.parse(row.blocks) as unknown[]).length);
    // t1: its first write whole, then only [d] from index 1 (what replaced b, c, and the truncation).
    expect(JSON.parse(wholes[0]?.blocks ?? '')).toEqual([a]);
    expect(segments.filter((row) => row.turn_id === 't1').map((row) => [row.start, JSON.parse(row.blocks)])).toEqual([[1, [d]]]);
    // t2: its first write whole, fifteen segments, then its seventeenth write merged them with its own
    // block into one segment (never the whole turn again), then three appends.
    expect(lengths(wholes.slice(1))).toEqual([1]);
    expect(segments.filter((row) => row.turn_id === 't2').map((row) => row.start)).toEqual([1, 17, 18, 19]);
    expect(lengths(segments.filter((row) => row.turn_id === 't2'))).toEqual([16, 1, 1, 1]);
    const reopened = open();
    expect(await reopened.turns('c1')).toEqual(expected);
    reopened.putConversation(conversation('c1'));
    expect((await reopened.load()).conversations[0]?.turns).toEqual(expected);
    // Written again after the restart (a recovered run): stored whole, its old segments dropped.
    reopened.putTurn('c1', { id: 't1', blocks: [a, d, c] });
    expect((await reopened.turns('c1'))[0]).toEqual({ id: 't1', blocks: [a, d, c] });
  });

  it('should read back every turn written whole or in part when a conversation writes two turns in one batch, or is forgotten between writes', async () => {
    const store = open();
    const block = (id: string): Block => ({ id, kind: 'llm_text', role: 'assistant', payload: { text: id } });
    const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map(block) as [Block, Block, Block, Block, Block];
    store.putTurn('c1', { id: 't1', blocks: [a] });
    await store.flush();
    // One batch: the old turn's last write, a new turn, the old one again (a run ending as the next starts).
    store.putTurn('c1', { id: 't1', blocks: [a, b] });
    store.putTurn('c1', { id: 't2', blocks: [c] });
    store.putTurn('c1', { id: 't1', blocks: [a, b, c] });
    await store.flush();
    expect(await store.turns('c1')).toEqual([{ id: 't1', blocks: [a, b, c] }, { id: 't2', blocks: [c] }]);
    // Its write caches forgotten (a hibernated run): the next write of a turn is whole, and right.
    store.putTurn('c1', { id: 't2', blocks: [c, d] });
    await store.flush();
    store.forget?.('c1');
    store.putTurn('c1', { id: 't2', blocks: [c, d, e] });
    await store.flush();
    const expected = [{ id: 't1', blocks: [a, b, c] }, { id: 't2', blocks: [c, d, e] }];
    expect(await store.turns('c1')).toEqual(expected);
    await store.close();
    expect(await open().turns('c1')).toEqual(expected);
  });

  it('should keep every frame whose append completed when its process is killed with SIGKILL', async () => {
    const writer = startStoreChild('write', dir);
    children.push(writer);
    await writer.line(/^paused$/);
    await writer.line(/^committed (5\d\d|[6-9]\d\d|\d{4,})$/);
    await writer.kill('SIGKILL');
    const acknowledged = Math.max(...[...writer.output().matchAll(/^committed (\d+)$/gm)].map((match) => Number(match[1])));

    const store = open();
    const lastSeq = await store.lastSeq('crash');
    expect(lastSeq).toBeGreaterThanOrEqual(acknowledged);
    const { frames: stored } = await store.frames('crash');
    expect(stored).toEqual(frames('crash', 1, lastSeq));
    expect(await store.pauses('crash')).toEqual([pause('crash', 'p_crash')]);
    expect(await store.checkpoints('crash')).toEqual([checkpoint('crash', 'inf_1')]);
    await append(store, frames('crash', lastSeq + 1, lastSeq + 1));
  });

  it('should refuse a second process on the same data dir, naming the dir and the holder pid', async () => {
    const holder = startStoreChild('hold', dir);
    children.push(holder);
    await holder.line(/^ready$/);
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8').trim()).toBe(String(holder.pid));

    const refused = (() => {
      try {
        open();
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(refused).toBeInstanceOf(StoreLockedError);
    expect(refused).toMatchObject({ code: 'store_locked', dir, holderPid: holder.pid });
    expect((refused as Error).message).toContain(dir);
    expect((refused as Error).message).toContain(`process ${holder.pid}`);

    // The holder dies without closing: its lock goes with it and the next process takes over.
    await holder.kill('SIGKILL');
    const store = open();
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8').trim()).toBe(String(process.pid));
    await store.close();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });

  it('should tell a second process that the dir is in use (the child is the second one)', async () => {
    open();
    const second = startStoreChild('open', dir);
    children.push(second);
    expect(await second.line(/Error|opened/)).toBe(`StoreLockedError: the data dir ${dir} is in use by process ${process.pid}; stop it or choose another --data-dir`);
  });

  it('should say how to fix a driver whose native addon is missing', () => {
    expect(() => createSqliteStore({ dataDir: dir, nativeBinding: join(dir, 'missing.node') })).toThrow(
      expect.objectContaining({
        code: 'store_unavailable',
        message: expect.stringMatching(/cannot load its native addon: .*npm install-scripts approve better-sqlite3 && npm rebuild better-sqlite3.*--store memory/),
      }),
    );
    expect(existsSync(file())).toBe(false);
  });

  it('should refuse a second store in the same process', () => {
    open();
    expect(() => open()).toThrow(StoreLockedError);
  });

  it('should take over a lock file left by a dead process', async () => {
    const gone = startStoreChild('open', join(dir, 'elsewhere'));
    await gone.exited;
    writeFileSync(join(dir, LOCK_FILE), `${gone.pid}\n`);
    open();
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8').trim()).toBe(String(process.pid));
  });

  /** Opening fails with StoreUnreadableError matching `reason`, and the file stays byte for byte as it was. */
  const expectUnreadable = (reason: RegExp): void => {
    const before = readFileSync(file());
    let refused: unknown;
    try {
      open();
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(StoreUnreadableError);
    expect(refused).toMatchObject({ code: 'store_unreadable', file: file() });
    expect((refused as Error).message).toMatch(reason);
    expect((refused as Error).message).toContain('left untouched');
    expect(readFileSync(file()).equals(before)).toBe(true);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  };

  it('should refuse a truncated database file and leave it untouched', async () => {
    await seeded(3000);
    const size = readFileSync(file()).length;
    expect(size).toBeGreaterThan(8 * 4096);
    truncateSync(file(), Math.floor(size / 2));
    expectUnreadable(/truncated/);
  });

  it('should report a page that turns out corrupt as unreadable, leaving the file untouched', async () => {
    await seeded(3000);
    const size = readFileSync(file()).length;
    const middle = Math.floor(size / 2 / 8192) * 8192;
    const damaged = readFileSync(file());
    damaged.fill(0x41, middle, middle + 8192);
    writeFileSync(file(), damaged);
    const store = open();
    // Reading everything there is reaches the damaged page, whichever table it belongs to.
    const everything = Promise.all([store.load(), store.frames('c1'), store.decisions('c1')]);
    await expect(everything).rejects.toBeInstanceOf(StoreUnreadableError);
    await expect(everything).rejects.toThrow(/cannot read the store .*stepwise\.db: it is corrupt: database disk image is malformed/);
    await store.close();
    expect(readFileSync(file()).equals(damaged)).toBe(true);
  });

  it('should refuse a file that is not an SQLite database', () => {
    writeFileSync(file(), 'x'.repeat(4096));
    expectUnreadable(/not an SQLite database/);
  });

  it('should refuse an SQLite database that is not a stepwise store', () => {
    const other = new Database(file());
    other.exec('CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES (1)');
    other.close();
    expectUnreadable(/not a stepwise store/);
  });

  it('should refuse a store of a newer schema version and leave it untouched', async () => {
    await seeded();
    const raw = new Database(file());
    raw.pragma('user_version = 99');
    raw.close();
    expectUnreadable(new RegExp(`schema version is 99, newer than the ${LATEST_VERSION} this stepwise knows`));
  });
});
