import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { StoreError, StoreLockedError } from '../../core/store-errors.js';
import { checkStoreFile, FileBusyError, isBusy } from './check-file.js';
import { loadDriver } from './driver.js';
import { createLockFile, type LockFile } from './lock-file.js';
import { migrate } from './migrations.js';
import { STORE_FILE, type DriverOptions } from './store-file.js';


/** A store's database, held exclusively, with the file that names its holder. */
export interface OpenDatabase {
  readonly db: Database.Database;
  readonly file: string;
  readonly lockFile: LockFile;
}

/**
 * Opens `stepwise.db` in `dataDir` (created when missing) for this process alone: the driver is
 * checked, the file is checked read-only (left as it was when it is not a store it can read), then
 * opened with SQLite's exclusive lock, migrated, and `stepwise.lock` names this pid.
 * Throws `StoreLockedError` when another store holds the dir.
 */
export function openDatabase(dataDir: string, driver: DriverOptions, synchronous: 'normal' | 'full'): OpenDatabase {
  checkDriver(driver);
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, STORE_FILE);
  const lockFile = createLockFile(dir);
  const locked = (): StoreLockedError => new StoreLockedError(dir, lockFile.liveHolder());

  try {
    checkStoreFile(file, driver);
  } catch (error) {
    throw error instanceof FileBusyError ? locked() : error;
  }
  const db = openExclusive(file, { ...driver, synchronous }, locked);
  // The read-only check may have left a shared-memory file; an exclusive WAL connection uses none,
  // and no other can open the file while we hold it.
  rmSync(`${file}-shm`, { force: true });
  lockFile.claim();
  return { db, file, lockFile };
}

/**
 * The driver is a native addon: npm 11 skips building it unless the installing project allows its
 * install script, and then every open would fail with a message about `bindings`. Say what to do.
 */
function checkDriver(driver: DriverOptions): void {
  try {
    new (loadDriver())(':memory:', driver).close();
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new StoreError(
      'store_unavailable',
      `the SQLite store's driver (better-sqlite3) cannot load its native addon: ${reason}. ` +
        'If npm skipped its build, run "npm install-scripts approve better-sqlite3 && npm rebuild better-sqlite3", or start with --store memory',
    );
  }
}

/**
 * Opens the file read-write and takes SQLite's exclusive lock at once (`locking_mode = EXCLUSIVE`
 * keeps it until close; with WAL it also means no shared-memory file), then migrates.
 */
function openExclusive(
  file: string,
  { synchronous, ...driver }: DriverOptions & { readonly synchronous: 'normal' | 'full' },
  locked: () => StoreLockedError,
): Database.Database {
  // timeout 0: a second process is told at once instead of waiting on the holder's lock.
  const Driver = loadDriver();
  const db = new Driver(file, { ...driver, timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // Takes effect only when the file is created. A frame chunk fits a page of this size whole, where
    // the default pages split it, so appending frames touches fewer pages.
    db.pragma('page_size = 8192');
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    // A checkpoint costs two fsyncs whatever its size: one per 32 MB of WAL rather than per 8 MB
    // (SQLite's default of 1000 pages) spreads those fsyncs over more frames appended.
    db.pragma('wal_autocheckpoint = 4096');
    // An empty exclusive transaction takes the lock that EXCLUSIVE mode then keeps.
    db.exec('BEGIN EXCLUSIVE; COMMIT');
    migrate(db);
    return db;
  } catch (error) {
    db.close();
    throw isBusy(error) ? locked() : error;
  }
}
