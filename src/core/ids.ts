import { randomBytes } from 'node:crypto';

/** Where every id comes from: injected, so tests and marble specs get predictable ids. */
export interface IdSource {
  next(prefix: string): string;
}

/**
 * Unique ids for real use: `pause_3f2a9c1e04k`, a random part per source then a counter. Unique
 * across restarts and runtimes, and a counter costs next to nothing where a UUID per id is slow to make.
 * Not secrets: ownership, not unguessability, protects a conversation or a pause.
 */
export function createRandomIds(): IdSource {
  const seed = randomBytes(5).toString('hex');
  let counter = 0;
  // Joined rather than a template: `join` builds one flat string, where a template of this length is
  // a tree of V8 cons strings, more heap per id, and every paused run holds several ids.
  return { next: (prefix) => [prefix, '_', seed, (counter++).toString(36)].join('') };
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
