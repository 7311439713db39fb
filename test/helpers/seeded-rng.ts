import { randomInt } from 'node:crypto';

/*
 * A seeded source of choices for the fuzz tests: the same seed makes the same script and the same decisions.
 */

/** The seed of this run: `STEPWISE_FUZZ_SEED` when set, else a random one (printed by the tests). */
export function fuzzSeed(): number {
  const given = process.env['STEPWISE_FUZZ_SEED'];
  if (given === undefined || given.trim() === '') return randomInt(0, 2 ** 32);
  const seed = Number(given);
  if (!Number.isSafeInteger(seed) || seed < 0) throw new TypeError(`STEPWISE_FUZZ_SEED must be a non-negative integer, got "${given}"`);
  return seed >>> 0;
}

/** A small seeded PRNG (mulberry32): the same seed gives the same script and the same decisions. */
export interface Rng {
  readonly seed: number;
  /** In [0, 1). */
  float(): number;
  /** In [min, max], both included. */
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** One of `entries`, each as likely as its weight. */
  weighted<T>(entries: readonly (readonly [number, T])[]): T;
  /** A random subset (possibly empty) of `items`, in their order. */
  subset<T>(items: readonly T[], p?: number): T[];
  shuffle<T>(items: readonly T[]): T[];
  /** A new generator seeded from this one: independent streams for concurrent conversations. */
  fork(): Rng;
}

export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  const float = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number): number => min + Math.floor(float() * (max - min + 1));
  const rng: Rng = {
    seed,
    float,
    int,
    chance: (p) => float() < p,
    pick: (items) => items[int(0, items.length - 1)] as never,
    weighted: (entries) => {
      const total = entries.reduce((sum, [weight]) => sum + weight, 0);
      let at = float() * total;
      for (const [weight, value] of entries) {
        at -= weight;
        if (at < 0) return value;
      }
      return (entries[entries.length - 1] as readonly [number, never])[1];
    },
    subset: (items, p = 0.5) => items.filter(() => float() < p),
    shuffle: (items) => {
      const copy = items.slice();
      for (let i = copy.length - 1; i > 0; i -= 1) {
        const j = int(0, i);
        [copy[i], copy[j]] = [copy[j] as never, copy[i] as never];
      }
      return copy;
    },
    fork: () => createRng(int(0, 2 ** 32 - 1)),
  };
  return rng;
}
