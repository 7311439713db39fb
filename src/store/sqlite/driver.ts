import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const requireDriver = createRequire(import.meta.url);

/**
 * better-sqlite3, loaded when a SQLite store is opened rather than when the package is imported
 * (docs/library.md, A light import): a program on the memory or Redis store never
 * loads the native addon. `require` keeps opening a store synchronous, as `serve` expects.
 */
export const loadDriver = (): typeof BetterSqlite3 => requireDriver('better-sqlite3') as typeof BetterSqlite3;
