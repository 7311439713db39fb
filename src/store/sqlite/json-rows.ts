import type { Statement } from 'better-sqlite3';

/** Columns that hold JSON, parsed as the type they were written as. */
export const parse = <T>(json: string): T => JSON.parse(json) as T;
export const parseAll = <T>(statement: Statement, ...params: unknown[]): T[] => (statement.all(...params) as string[]).map((json) => parse<T>(json));
