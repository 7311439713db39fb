import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { LATEST_VERSION, migrate, STEPWISE_APPLICATION_ID, type Migration } from '../../src/store/sqlite/migrations.js';
import { createSqliteStore, STORE_FILE } from '../../src/store/sqlite/sqlite-store.js';
import { useTempDir } from './fixtures.js';

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
});
