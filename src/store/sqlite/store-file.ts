// Apart from ./open-database.ts, which names better-sqlite3's types: what the package's public types
// reach must not need them (a consumer has no @types/better-sqlite3; test/package/pack.test.ts).

/** The database file in a data dir. */
export const STORE_FILE = 'stepwise.db';

/** What better-sqlite3 is told besides the file. */
export interface DriverOptions {
  readonly nativeBinding?: string;
}
