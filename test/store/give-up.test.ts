import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { createGiveUp } from '../../src/store/give-up.js';

/** Heap in use after a full collection (`gc` fetched from a fresh context, as bench/scenario.ts does). */
function settledHeap(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  for (let i = 0; i < 4; i += 1) gc();
  return process.memoryUsage().heapUsed;
}

describe('createGiveUp', () => {
  it('should settle a race as its work does, and reject the races in flight and after once given up', async () => {
    const attempts = createGiveUp();
    await expect(attempts.race(Promise.resolve('replies'))).resolves.toBe('replies');
    await expect(attempts.race(Promise.reject(new Error('exec failed')))).rejects.toThrow('exec failed');
    const parked = attempts.race(new Promise<never>(() => undefined));
    attempts.giveUp(new Error('closed'));
    await expect(parked).rejects.toThrow('closed');
    await expect(attempts.race(Promise.resolve('late'))).rejects.toThrow('closed');
  });

  it('should keep nothing of the races that finished, however many', async () => {
    const attempts = createGiveUp();
    const before = settledHeap();
    // As a store's commits: each resolves with its replies, about 1 KB here.
    for (let i = 0; i < 20_000; i += 1) await attempts.race(Promise.resolve(new Array(128).fill(i)));
    // With one pending promise raced each time, 20 000 replies (about 20 MB) stayed.
    expect((settledHeap() - before) / 20_000).toBeLessThan(50);
  });
});
