import { randomUUID } from 'node:crypto';

/** Where every id comes from: injected, so tests and marble specs get predictable ids. */
export interface IdSource {
  next(prefix: string): string;
}

/** Random ids for real use: `pause_3f2a…`. */
export function createRandomIds(): IdSource {
  return { next: (prefix) => `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 16)}` };
}

/** Counting ids for tests: `pause_1`, `pause_2`, … per prefix. */
export function createSequentialIds(): IdSource {
  const counters = new Map<string, number>();
  return {
    next(prefix) {
      const n = (counters.get(prefix) ?? 0) + 1;
      counters.set(prefix, n);
      return `${prefix}_${n}`;
    },
  };
}
