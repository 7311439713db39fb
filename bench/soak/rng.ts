/** A seeded source of numbers in [0, 1): the operators' choices are reproducible from the report's seed. */
export type Rng = () => number;

/** mulberry32: small, fast and good enough to pick actions and instances. */
export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
