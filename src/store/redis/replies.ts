import type { Redis } from 'ioredis';

/** Values stored as JSON, parsed as the type they were written as. */
export const parse = <T>(json: string): T => JSON.parse(json) as T;

/** A MULTI's replies, each checked: a failed command fails the read. */
export async function execAll(multi: ReturnType<Redis['multi']>): Promise<unknown[]> {
  const replies = (await multi.exec()) ?? [];
  return replies.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}

/** Pairs `[field, value, …]` (HGETALL) into a Map. */
export const toMap = (pairs: Record<string, string>): Map<string, string> => new Map(Object.entries(pairs));
