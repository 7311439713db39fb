import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createWriteQueue } from '../../src/store/write-queue.js';

/** A queue whose batches start when the test says so, and whose commits the test settles by hand. */
function manualQueue(mode: 'sync' | 'async') {
  const scheduled: (() => void)[] = [];
  const commits: { ops: readonly number[]; settle: (error?: Error) => void }[] = [];
  const failing = new Set<number>();
  const queue = createWriteQueue<number>({
    schedule: (task) => void scheduled.push(task),
    commit: (ops) => {
      if (mode === 'sync') {
        if (ops.some((op) => failing.has(op))) throw new Error(`batch ${ops.join(',')} failed`);
        commits.push({ ops, settle: () => undefined });
        return;
      }
      return new Promise<void>((resolve, reject) => commits.push({ ops, settle: (error) => (error ? reject(error) : resolve()) }));
    },
  });
  const tick = (): void => {
    for (const task of scheduled.splice(0)) task();
  };
  return { queue, commits, failing, tick };
}

const state = (promise: Promise<unknown>): Promise<string> =>
  Promise.race([promise.then(() => 'resolved', (error: Error) => `rejected: ${error.message}`), new Promise<string>((done) => setImmediate(() => done('pending')))]);

describe('createWriteQueue', () => {
  it('should commit every write of one tick as one batch, in order', async () => {
    const { queue, commits, tick } = manualQueue('sync');
    queue.push(1);
    queue.push(2);
    const done = queue.flush();
    expect(await state(done)).toBe('pending');
    tick();
    expect(commits.map((c) => c.ops)).toEqual([[1, 2]]);
    expect(await state(done)).toBe('resolved');
    expect(await state(queue.flush())).toBe('resolved');
  });

  it('should give the writes of one batch one Observable of its commit, and the next batch another', () => {
    const { queue, tick } = manualQueue('sync');
    queue.push(1);
    const first = queue.committed();
    queue.push(2);
    expect(queue.committed()).toBe(first);
    tick();
    queue.push(3);
    expect(queue.committed()).not.toBe(first);
  });

  it('should commit at once on commitNow, leaving nothing for the scheduled task', () => {
    const { queue, commits, tick } = manualQueue('sync');
    queue.push(1);
    queue.commitNow();
    tick();
    expect(commits.map((c) => c.ops)).toEqual([[1]]);
  });

  it('should schedule one commit for a tick, which a batch opened after a commit made at once joins', () => {
    const { queue, commits, tick } = manualQueue('sync');
    const scheduled: (() => void)[] = [];
    const counted = createWriteQueue<number>({ schedule: (task) => void scheduled.push(task), commit: () => undefined });
    counted.push(1);
    counted.commitNow();
    counted.push(2);
    expect(scheduled).toHaveLength(1);
    queue.push(1);
    queue.commitNow();
    queue.push(2);
    queue.push(3);
    tick();
    expect(commits.map((c) => c.ops)).toEqual([[1], [2, 3]]);
    queue.push(4);
    tick();
    expect(commits.map((c) => c.ops)).toEqual([[1], [2, 3], [4]]);
  });

  it('should answer commitNowFor with the outcome of the commit it made, at once', () => {
    const { queue, commits, failing } = manualQueue('sync');
    const outcome = (convId: string): string => {
      let said = 'pending';
      queue.commitNowFor(convId).subscribe({ complete: () => (said = 'completed'), error: (error: Error) => (said = `error: ${error.message}`) });
      return said;
    };
    queue.push(1);
    expect(outcome('c1')).toBe('completed');
    expect(commits.map((c) => c.ops)).toEqual([[1]]);
    failing.add(2);
    queue.push(2);
    expect(outcome('c1')).toBe('error: batch 2 failed');
    // Nothing open: how the last batch went.
    expect(outcome('c1')).toBe('error: batch 2 failed');
    queue.push(3);
    expect(outcome('c1')).toBe('completed');
  });

  it('should wait on an asynchronous commit from commitNowFor until it settles', async () => {
    const { queue, commits } = manualQueue('async');
    queue.push(1);
    const done = lastValueFrom(queue.commitNowFor('c1'), { defaultValue: undefined });
    expect(commits.map((c) => c.ops)).toEqual([[1]]);
    expect(await state(done)).toBe('pending');
    commits[0]?.settle();
    expect(await state(done)).toBe('resolved');
  });

  it('should fail only the batch whose commit failed', async () => {
    const { queue, failing, tick } = manualQueue('sync');
    failing.add(2);
    queue.push(1);
    queue.push(2);
    const first = lastValueFrom(queue.committed(), { defaultValue: undefined });
    tick();
    expect(await state(first)).toBe('rejected: batch 1,2 failed');
    queue.push(3);
    const second = queue.flush();
    tick();
    expect(await state(second)).toBe('resolved');
  });

  it('should start an asynchronous batch only after the one before it settled, with every write made meanwhile', async () => {
    const { queue, commits, tick } = manualQueue('async');
    queue.push(1);
    tick();
    // Waiting on a batch in flight: committed() covers it, not only the open one.
    const inFlight = queue.flush();
    queue.push(2);
    const second = queue.flush();
    tick();
    queue.push(3);
    const third = queue.flush();
    tick();
    expect(commits.map((c) => c.ops)).toEqual([[1]]);
    commits[0]?.settle();
    expect(await state(inFlight)).toBe('resolved');
    // The writes of two ticks, one commit: not one round trip per tick behind the one in flight.
    expect(commits.map((c) => c.ops)).toEqual([[1], [2, 3]]);
    queue.push(4);
    const fourth = queue.flush();
    queue.commitNow();
    tick();
    expect(commits).toHaveLength(2);
    commits[1]?.settle(new Error('network'));
    expect(await state(second)).toBe('rejected: network');
    expect(await state(third)).toBe('rejected: network');
    await state(fourth);
    expect(commits.map((c) => c.ops)).toEqual([[1], [2, 3], [4]]);
    commits[2]?.settle();
    expect(await state(fourth)).toBe('resolved');
  });
});
