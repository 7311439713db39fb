import { marbles } from 'rxjs-marbles/jest';
import { createDeadlineIndex } from '../../src/streams/deadline-index.js';
import { createProbe } from './helpers.js';

/** An index on a logged virtual clock, and what fired when; `then` runs more when a key fires. */
function setup(m: Parameters<Parameters<typeof marbles>[0]>[0]) {
  const timers = createProbe(m);
  const clock = timers.clock();
  const then = new Map<string, () => void>();
  const fired: string[] = [];
  const index = createDeadlineIndex(clock, (key) => {
    fired.push(`${key}@${clock.now()}`);
    then.get(key)?.();
  });
  const at = (key: string, time: number) => index.set(key, time);
  return { index, fired, at, timers, then };
}

/** An index on a clock whose timers run `shift` ms off the time they were armed for, and what fired when. */
function shifted(m: Parameters<Parameters<typeof marbles>[0]>[0], shift: (delay: number) => number) {
  const clock = { now: () => m.scheduler.now(), schedule: ((work: () => void, delay = 0) => m.scheduler.schedule(work, shift(delay))) as typeof m.scheduler.schedule };
  const fired: string[] = [];
  return { index: createDeadlineIndex(clock, (key) => fired.push(`${key}@${clock.now()}`)), fired };
}

describe('createDeadlineIndex', () => {
  it('should fire each duty at its time, soonest first, with one timer armed at a time', marbles((m) => {
    const { fired, at, timers } = setup(m);
    at('a', 30);
    at('b', 10);
    at('c', 20);
    // One timer: the one armed for a went when b came sooner; then one for c and one for a as each fires.
    m.expect(timers.log).toHaveSubscriptions(['(^!)', '^---------!', '----------^---------!', '--------------------^---------!']);
    m.scheduler.schedule(() => expect(fired).toEqual(['b@10', 'c@20', 'a@30']), 40);
  }));

  it('should fire duties due at the same time in the order they were set', marbles((m) => {
    const { fired, at } = setup(m);
    at('late', 5);
    at('first', 5);
    at('second', 5);
    m.scheduler.schedule(() => expect(fired).toEqual(['late@5', 'first@5', 'second@5']), 6);
  }));

  it('should never fire a deleted duty and disarm once none is left', marbles((m) => {
    const { index, fired, at, timers } = setup(m);
    at('a', 10);
    at('b', 20);
    m.scheduler.schedule(() => index.delete('a'), 3);
    m.scheduler.schedule(() => index.delete('b'), 4);
    // The timer armed for a went when the index emptied: an idle process has nothing keeping it alive.
    m.expect(timers.log).toHaveSubscriptions('^---!');
    m.scheduler.schedule(() => {
      expect(fired).toEqual([]);
      expect(index.size).toBe(0);
    }, 30);
  }));

  it('should replace a duty set again under its key', marbles((m) => {
    const { fired, at } = setup(m);
    at('a', 10);
    at('a', 25);
    m.scheduler.schedule(() => expect(fired).toEqual(['a@25']), 30);
  }));

  it('should fire at once a duty whose time has passed, and one set while firing at its own time', marbles((m) => {
    const { fired, at, then } = setup(m);
    m.scheduler.schedule(() => at('past', 2), 8);
    then.set('chain', () => at('next', 4));
    at('chain', 4);
    m.scheduler.schedule(() => expect(fired).toEqual(['chain@4', 'next@4', 'past@8']), 9);
  }));

  it('should keep only live duties as many come and go', marbles((m) => {
    const { index, fired, at } = setup(m);
    for (let i = 0; i < 1000; i += 1) at(`k${i}`, 100 + i);
    for (let i = 0; i < 1000; i += 2) index.delete(`k${i}`);
    expect(index.size).toBe(500);
    m.scheduler.schedule(() => expect(fired).toEqual(Array.from({ length: 500 }, (_, j) => `k${2 * j + 1}@${101 + 2 * j}`)), 1200);
  }));

  it('should never fire a duty before its time when a timer fires early, arming again for the rest', marbles((m) => {
    // A real clock: Node's timers count from the event loop's cached time, so one can run a
    // millisecond before the wall clock reaches the time it was armed for.
    const { index, fired } = shifted(m, (delay) => (delay > 1 ? delay - 1 : delay));
    for (const [key, time] of [['a', 10], ['b', 20]] as const) index.set(key, time);
    m.scheduler.schedule(() => expect(fired).toEqual(['a@10', 'b@20']), 30);
  }));

  it('should fire every duty due by the clock when its timer fires late, not one armed time per timer', marbles((m) => {
    // A busy process: every timer runs 5 ms after the time it was armed for.
    const { index, fired } = shifted(m, (delay) => delay + 5);
    for (const [key, time] of [['a', 10], ['b', 12], ['c', 14], ['d', 30]] as const) index.set(key, time);
    m.scheduler.schedule(() => expect(fired).toEqual(['a@15', 'b@15', 'c@15', 'd@35']), 40);
  }));
});
