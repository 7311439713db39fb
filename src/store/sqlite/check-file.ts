import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { StoreUnreadableError } from '../../core/store-errors.js';
import { loadDriver } from './driver.js';
import { LATEST_VERSION, STEPWISE_APPLICATION_ID } from './migrations.js';

/** What the check found: a file to create, or a stepwise store at some schema version. */
export type FileState = { readonly fresh: true } | { readonly fresh: false; readonly version: number };

/** SQLite's "database is locked": another connection holds the store. */
export class FileBusyError extends Error {
  override readonly name = 'FileBusyError';
}

const HEADER = Buffer.from('SQLite format 3\u0000', 'latin1');

/**
 * Reads the store file before anything writes to it, and refuses what cannot be used: not SQLite,
 * truncated, not a stepwise store, or a newer schema. Only a read-only connection touches the file
 * here: a read-write one would rewrite its header (journal mode) or checkpoint its WAL on close,
 * and the file must be left as it was. Page contents past the schema are not scanned (a full
 * `quick_check` would cost the restart a read of the whole file); SQLite reports those when read.
 */
export function checkStoreFile(file: string, driver: { readonly nativeBinding?: string } = {}): FileState {
  if (!existsSync(file)) return { fresh: true };
  const size = statSync(file).size;
  // Crashed before its first page was written: nothing to lose. With a WAL beside it, it was cut.
  if (size === 0 && !existsSync(`${file}-wal`)) return { fresh: true };
  checkHeader(file, size);
  let db: Database.Database | undefined;
  try {
    const Driver = loadDriver();
    db = new Driver(file, { ...driver, readonly: true, fileMustExist: true, timeout: 0 });
    const version = db.pragma('user_version', { simple: true }) as number;
    const applicationId = db.pragma('application_id', { simple: true }) as number;
    const tables = (db.prepare('SELECT count(*) AS n FROM sqlite_master').get() as { n: number }).n;
    if (version === 0 && tables === 0) return { fresh: true };
    if (applicationId !== STEPWISE_APPLICATION_ID) {
      throw new StoreUnreadableError(file, 'it is an SQLite database but not a stepwise store');
    }
    if (version > LATEST_VERSION) {
      throw new StoreUnreadableError(
        file,
        `its schema version is ${version}, newer than the ${LATEST_VERSION} this stepwise knows; upgrade stepwise or use another --data-dir`,
      );
    }
    return { fresh: false, version };
  } catch (error) {
    if (error instanceof StoreUnreadableError) throw error;
    if (isBusy(error)) throw new FileBusyError(String(error));
    throw new StoreUnreadableError(file, error instanceof Error ? error.message : String(error));
  } finally {
    db?.close();
  }
}

const codeOf = (error: unknown): unknown => (error instanceof Error && 'code' in error ? error.code : undefined);

export const isBusy = (error: unknown): boolean => codeOf(error) === 'SQLITE_BUSY' || codeOf(error) === 'SQLITE_LOCKED';

/** SQLite's codes for a file whose pages do not hold a valid database (SQLITE_CORRUPT and its extended codes). */
export const isCorrupt = (error: unknown): boolean => {
  const code = codeOf(error);
  return typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB');
};

/** The 100-byte header: the magic string, and a page count that the file's size must cover. */
function checkHeader(file: string, size: number): void {
  if (size < 100) throw new StoreUnreadableError(file, `it is ${size} bytes long, shorter than an SQLite header (truncated?)`);
  const header = Buffer.alloc(100);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, header, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  if (!header.subarray(0, HEADER.length).equals(HEADER)) throw new StoreUnreadableError(file, 'it is not an SQLite database');
  const rawPageSize = header.readUInt16BE(16);
  const pageSize = rawPageSize === 1 ? 65_536 : rawPageSize;
  const pageCount = header.readUInt32BE(28);
  // The header's page count is only valid when written by the same change as its version-valid-for.
  const countIsValid = header.readUInt32BE(92) === header.readUInt32BE(24);
  if (countIsValid && pageCount > 0 && size < pageCount * pageSize) {
    throw new StoreUnreadableError(file, `it is ${size} bytes long where its header says ${pageCount * pageSize} (truncated)`);
  }
}
