import { describe, expect, it } from 'vitest';
import { immediateScheduler } from '../../src/streams/immediate-scheduler.js';

const turn = (): Promise<void> => new Promise((done) => setTimeout(done, 5));

describe('immediateScheduler', () => {
  it('should run work after every microtask queued after it, and before a timer set before it', async () => {
    const order: string[] = [];
    setTimeout(() => order.push('timer'), 0);
    immediateScheduler.schedule(() => order.push('work'));
    let chain = Promise.resolve();
    for (let hop = 0; hop < 50; hop += 1) chain = chain.then(() => undefined);
    void chain.then(() => order.push('microtasks'));
    await turn();
    expect(order.slice(0, 2)).toEqual(['microtasks', 'work']);
    expect(order).toContain('timer');
  });

  it('should run nothing once unsubscribed, delayed or not', async () => {
    const ran: string[] = [];
    immediateScheduler.schedule(() => ran.push('now')).unsubscribe();
    immediateScheduler.schedule(() => ran.push('later'), 1).unsubscribe();
    await turn();
    expect(ran).toEqual([]);
  });

  it('should pass its state, wait a delay on a timer, and run again when the work reschedules itself', async () => {
    const seen: number[] = [];
    const began = Date.now();
    immediateScheduler.schedule<number>(
      function (count = 0) {
        seen.push(count);
        if (count < 2) this.schedule(count + 1);
      },
      3,
      0,
    );
    await turn();
    await turn();
    expect(seen).toEqual([0, 1, 2]);
    expect(Date.now() - began).toBeGreaterThanOrEqual(3);
  });
});
