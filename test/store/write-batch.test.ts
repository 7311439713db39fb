import { describe, expect, it } from 'vitest';
import { batchDone$, commitBatch, openBatch } from '../../src/store/write-batch.js';

/** What each waiter heard: `complete`, `error: <message>`, or nothing yet. */
function waitOn(batch: ReturnType<typeof openBatch<number>>, count: number) {
  const heard: string[] = Array.from({ length: count }, () => '');
  const subscriptions = heard.map((_, index) =>
    batchDone$(batch).subscribe({ complete: () => (heard[index] += 'complete'), error: (error: Error) => (heard[index] += `error: ${error.message}`) }),
  );
  return { heard, subscriptions };
}

describe('a write batch and its waiters', () => {
  it('should tell each of 100 000 waiters once when the batch commits, and none that left before', () => {
    const batch = openBatch<number>();
    batch.ops.push(1);
    const { heard, subscriptions } = waitOn(batch, 100_000);
    subscriptions[7]?.unsubscribe();
    expect(heard.every((said) => said === '')).toBe(true);

    commitBatch(() => undefined, batch, () => undefined);

    expect(heard[7]).toBe('');
    expect(heard.filter((said) => said === 'complete')).toHaveLength(99_999);
    expect(batch.waiters).toBeUndefined();
    expect(subscriptions.every((subscription) => subscription.closed)).toBe(true);
  });

  it('should tell every waiter, and one that comes after, the error of a batch that failed', async () => {
    const batch = openBatch<number>();
    const { heard } = waitOn(batch, 3);
    let fail: (error: Error) => void = () => undefined;
    const settled = commitBatch(() => new Promise<void>((_, reject) => (fail = reject)), batch, () => undefined);
    expect(heard).toEqual(['', '', '']);

    fail(new Error('disk full'));
    await settled;

    expect(heard).toEqual(['error: disk full', 'error: disk full', 'error: disk full']);
    expect(waitOn(batch, 1).heard).toEqual(['error: disk full']);
  });

  it('should complete a waiter that comes after the commit at once, and tell the queue first', () => {
    const batch = openBatch<number>();
    const order: string[] = [];
    batchDone$(batch).subscribe({ complete: () => order.push('waiter') });
    commitBatch(() => undefined, batch, (settled) => order.push(`queue: ${String(settled.settled)}`));
    expect(order).toEqual(['queue: true', 'waiter']);
    expect(waitOn(batch, 1).heard).toEqual(['complete']);
  });
});
