import { marbles } from 'rxjs-marbles/jest';
import type { SchedulerLike } from 'rxjs';
import { createSliceQueue } from '../../src/sessions/slice-queue.js';

/** A scheduler whose clock each item of work moves on by `costMs`, as it takes time on a real clock. */
function costly(m: Parameters<Parameters<typeof marbles>[0]>[0], costMs: number) {
  let spent = 0;
  const scheduler: SchedulerLike = {
    now: () => m.scheduler.now() + spent,
    schedule: m.scheduler.schedule.bind(m.scheduler) as SchedulerLike['schedule'],
  };
  return { scheduler, spend: () => (spent += costMs) };
}

describe('createSliceQueue', () => {
  it('should run work in the order pushed, after the task that pushed them', marbles((m) => {
    const queue = createSliceQueue(m.scheduler);
    const ran: string[] = [];
    m.scheduler.schedule(() => {
      queue.push(() => ran.push(`a@${m.scheduler.now()}`));
      queue.push(() => ran.push(`b@${m.scheduler.now()}`));
      expect(ran).toEqual([]);
      expect(queue.size).toBe(2);
    }, 3);
    m.scheduler.schedule(() => {
      expect(ran).toEqual(['a@3', 'b@3']);
      expect(queue.size).toBe(0);
    }, 4);
  }));

  it('should yield to the scheduler once a slice has run its time, and let tasks between slices run', marbles((m) => {
    const { scheduler, spend } = costly(m, 2);
    const queue = createSliceQueue(scheduler, { sliceMs: 3 });
    const ran: string[] = [];
    m.scheduler.schedule(() => {
      for (const name of ['a', 'b', 'c', 'd', 'e']) queue.push(() => (ran.push(name), spend()));
      // A task due as the first slice runs (a deadline's timer): it runs before the second slice.
      m.scheduler.schedule(() => ran.push('timer'));
    }, 1);
    m.scheduler.schedule(() => expect(ran).toEqual(['a', 'b', 'timer', 'c', 'd', 'e']), 5);
  }));

  it('should fail at factory time on a bad sliceMs', () => {
    expect(() => createSliceQueue({ now: () => 0, schedule: () => ({}) as never }, { sliceMs: -1 })).toThrow(/sliceMs must be a non-negative number, got -1/);
  });
});

describe('createSliceQueue with defer', () => {
  it('should put each slice off with defer, not the scheduler, and run the work in order', async () => {
    const deferred: Array<() => void> = [];
    const queue = createSliceQueue({ now: () => 0, schedule: () => { throw new Error('the scheduler was used'); } } as unknown as SchedulerLike, { defer: (task) => void deferred.push(task) });
    const ran: string[] = [];
    queue.push(() => ran.push('a'));
    queue.push(() => ran.push('b'));
    expect([ran, deferred.length]).toEqual([[], 1]);
    deferred.shift()?.();
    expect([ran, queue.size, deferred.length]).toEqual([['a', 'b'], 0, 0]);
  });
});
