import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { lastValueFrom } from 'rxjs';
import { LATEST_VERSION, migrate, MIGRATIONS, STEPWISE_APPLICATION_ID, type Migration } from '../../src/store/sqlite/migrations.js';
import { createSqliteStore, STORE_FILE } from '../../src/store/sqlite/sqlite-store.js';
import type { Block } from '../../src/core/turns.js';
import { checkpoint, conversation, frames, useTempDir, type TestEvent } from './fixtures.js';

describe('sqlite migrations', () => {
  const dirOf = useTempDir();

  it('should run each migration once, in order, recording the version', () => {
    const runs: number[] = [];
    const migrations: Migration[] = [
      { version: 1, description: 'a table', up: (db) => (runs.push(1), db.exec('CREATE TABLE a (x)')) },
      { version: 2, description: 'a column', up: (db) => (runs.push(2), db.exec('ALTER TABLE a ADD COLUMN y')) },
    ];
    const db = new Database(join(dirOf(), 'm.db'));
    expect(migrate(db, migrations.slice(0, 1))).toEqual([1]);
    expect(migrate(db, migrations)).toEqual([2]);
    expect(migrate(db, migrations)).toEqual([]);
    expect(runs).toEqual([1, 2]);
    expect(db.pragma('user_version', { simple: true })).toBe(2);
    db.close();
  });

  it('should leave the previous version intact when a migration fails', () => {
    const db = new Database(join(dirOf(), 'm.db'));
    const failing: Migration[] = [
      { version: 1, description: 'ok', up: (d) => d.exec('CREATE TABLE a (x)') },
      { version: 2, description: 'half done', up: (d) => (d.exec('CREATE TABLE b (x)'), d.exec('NOT SQL')) },
    ];
    expect(() => migrate(db, failing)).toThrow();
    expect(db.pragma('user_version', { simple: true })).toBe(1);
    expect(db.prepare(`SELECT name FROM sqlite_master WHERE name = 'b'`).get()).toBeUndefined();
    db.close();
  });

  it('should refuse migrations that are not numbered 1, 2, …', () => {
    const db = new Database(join(dirOf(), 'm.db'));
    expect(() => migrate(db, [{ version: 2, description: 'gap', up: () => undefined }])).toThrow(/numbered 1, 2/);
    db.close();
  });

  it('should create the store at the latest version once, and not migrate it again on reopen', async () => {
    await createSqliteStore({ dataDir: dirOf() }).close();
    const inspect = (): { version: unknown; id: unknown; tables: unknown } => {
      const db = new Database(join(dirOf(), STORE_FILE), { readonly: true });
      const found = {
        version: db.pragma('user_version', { simple: true }),
        id: db.pragma('application_id', { simple: true }),
        tables: db.prepare(`SELECT count(*) FROM sqlite_master WHERE type = 'table'`).pluck().get(),
      };
      db.close();
      return found;
    };
    const first = inspect();
    expect(first).toMatchObject({ version: LATEST_VERSION, id: STEPWISE_APPLICATION_ID });
    await createSqliteStore({ dataDir: dirOf() }).close();
    expect(inspect()).toEqual(first);
  });

  it('should read the frames of a version 1 file as they were written, and append after them', async () => {
    // The file as version 1 left it: each chunk a JSON array of whole events.
    const old = new Database(join(dirOf(), STORE_FILE));
    migrate(old, MIGRATIONS.slice(0, 1));
    old.prepare(`INSERT INTO conversations (conv_id, owner, created_at, record) VALUES (?, NULL, ?, ?)`).run('c1', 1, JSON.stringify(conversation('c1')));
    const secondRun = frames('c1', 4, 6).map((frame) => ({ ...frame, event: { ...frame.event, inference_id: 'inf_2', turn_id: 'turn_2' } }));
    const written = [...frames('c1', 1, 3), ...secondRun];
    const putChunk = old.prepare(`INSERT INTO frames (conv_id, first_seq, last_seq, events) VALUES ('c1', ?, ?, ?)`);
    putChunk.run(1, 2, JSON.stringify(written.slice(0, 2).map((frame) => frame.event)));
    putChunk.run(3, 6, JSON.stringify(written.slice(2).map((frame) => frame.event)));
    old.close();

    const store = createSqliteStore<TestEvent>({ dataDir: dirOf() });
    expect(await store.frames('c1')).toStrictEqual({ frames: written, last_seq: 6 });
    expect((await store.frames('c1', { since_seq: 2, limit: 2 })).frames).toStrictEqual(written.slice(2, 4));
    await lastValueFrom(store.appendFrames(frames('c1', 7, 9)), { defaultValue: undefined });
    await store.close();

    const reopened = createSqliteStore<TestEvent>({ dataDir: dirOf() });
    expect(await reopened.frames('c1')).toStrictEqual({ frames: [...written, ...frames('c1', 7, 9)], last_seq: 9 });
    expect((await reopened.load()).conversations.map((c) => c.last_seq)).toEqual([9]);
    await reopened.close();
    const db = new Database(join(dirOf(), STORE_FILE), { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(LATEST_VERSION);
    db.close();
  });

  it('should read the checkpoints of a version 3 file, whose JSON holds their blocks, and write new ones beside them', async () => {
    const old = new Database(join(dirOf(), STORE_FILE));
    migrate(old, MIGRATIONS.slice(0, 3));
    const before = checkpoint('c1', 'inf_1');
    old.prepare(`INSERT INTO checkpoints (conv_id, inference_id, checkpoint) VALUES (?, ?, ?)`).run('c1', 'inf_1', JSON.stringify(before));
    old.close();

    const store = createSqliteStore<TestEvent>({ dataDir: dirOf() });
    expect(await store.checkpoints('c1')).toEqual([before]);
    const after = checkpoint('c2', 'inf_2', { next: 'tools', iteration: 2 });
    store.putCheckpoint(after);
    expect(await store.checkpoints()).toEqual([before, after]);
    await store.close();
    const reopened = createSqliteStore<TestEvent>({ dataDir: dirOf() });
    expect((await reopened.load()).checkpoints).toEqual([before, after]);
    await reopened.close();
  });

  it('should read a turn of a version 4 file from its JSON, and go on with it in segments when it is written again', async () => {
    const old = new Database(join(dirOf(), STORE_FILE));
    migrate(old, MIGRATIONS.slice(0, 4));
    const blocks = (...texts: string[]): Block[] => texts.map((text) => ({ id: `b_${text}`, kind: 'user', role: 'user', payload: { text } }));
    old.prepare(`INSERT INTO turns (conv_id, turn_id, blocks) VALUES (?, ?, ?)`).run('c1', 't1', JSON.stringify(blocks('one', 'two')));
    // A running turn's checkpoint left its blocks to the turn (version 4 does that too).
    old.prepare(`INSERT INTO checkpoints (conv_id, inference_id, checkpoint, blocks) VALUES (?, ?, ?, NULL)`).run('c1', 'inf_1', JSON.stringify({ ...checkpoint('c1', 'inf_1', { turn_id: 't1' }), blocks: undefined }));
    old.close();

    const store = createSqliteStore<TestEvent>({ dataDir: dirOf() });
    expect(await store.turns('c1')).toEqual([{ id: 't1', blocks: blocks('one', 'two') }]);
    expect((await store.checkpoints('c1'))[0]?.blocks).toEqual(blocks('one', 'two'));
    const longer = [...blocks('one', 'two'), ...blocks('three')];
    store.putTurn('c1', { id: 't1', blocks: longer });
    expect(await store.turns('c1')).toEqual([{ id: 't1', blocks: longer }]);
    await store.close();
    const reopened = createSqliteStore<TestEvent>({ dataDir: dirOf() });
    expect(await reopened.turns('c1')).toEqual([{ id: 't1', blocks: longer }]);
    expect((await reopened.checkpoints('c1'))[0]?.blocks).toEqual(longer);
    await reopened.close();
  });

  it('should keep the turns of a version 1 file in their order, new turns going after them', async () => {
    const old = new Database(join(dirOf(), STORE_FILE));
    migrate(old, MIGRATIONS.slice(0, 1));
    const putTurn = old.prepare(`INSERT INTO turns (conv_id, turn_id, ord, blocks) VALUES (?, ?, ?, ?)`);
    const blocks = (text: string): Block[] => [{ id: `b_${text}`, kind: 'user', role: 'user', payload: { text } }];
    // Turn ids that sort against their order (the old table's key order is conv_id, turn_id).
    putTurn.run('c2', 't_a', 2, JSON.stringify(blocks('c2 second')));
    putTurn.run('c1', 't_z', 1, JSON.stringify(blocks('c1 first')));
    putTurn.run('c2', 't_b', 1, JSON.stringify(blocks('c2 first')));
    old.close();

    const store = createSqliteStore<TestEvent>({ dataDir: dirOf() });
    store.putConversation(conversation('c1', { created_at: 1 }));
    store.putConversation(conversation('c2', { created_at: 2 }));
    expect(await store.turns('c2')).toEqual([
      { id: 't_b', blocks: blocks('c2 first') },
      { id: 't_a', blocks: blocks('c2 second') },
    ]);
    store.putTurn('c2', { id: 't_c', blocks: blocks('c2 third') });
    store.putTurn('c2', { id: 't_b', blocks: blocks('c2 first, edited') });
    store.putTurn('c1', { id: 't_y', blocks: blocks('c1 second') });
    const expected = {
      c1: [
        { id: 't_z', blocks: blocks('c1 first') },
        { id: 't_y', blocks: blocks('c1 second') },
      ],
      c2: [
        { id: 't_b', blocks: blocks('c2 first, edited') },
        { id: 't_a', blocks: blocks('c2 second') },
        { id: 't_c', blocks: blocks('c2 third') },
      ],
    };
    expect({ c1: await store.turns('c1'), c2: await store.turns('c2') }).toEqual(expected);
    await store.close();

    const reopened = createSqliteStore<TestEvent>({ dataDir: dirOf() });
    const loaded = Object.fromEntries((await reopened.load()).conversations.map((c) => [c.conv_id, c.turns]));
    expect(loaded).toEqual(expected);
    await reopened.close();
  });
});
