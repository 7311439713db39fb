import { marbles } from 'rxjs-marbles/jest';
import { createDueQueue } from '../../src/streams/due-queue.js';
import { createProbe } from './helpers.js';

/** A queue whose owner keeps what stands in `standing` (key -> time), on a logged virtual clock. */
function setup(m: Parameters<Parameters<typeof marbles>[0]>[0]) {
  const timers = createProbe(m);
  const clock = timers.clock();
  const standing = new Map<string, number>();
  const fired: string[] = [];
  const queue = createDueQueue(clock, {
    fire: (key) => {
      fired.push(`${key}@${clock.now()}`);
      standing.delete(key);
    },
    isLive: (key, at) => standing.get(key) === at,
    liveCount: () => standing.size,
  });
  const add = (key: string, at: number): void => {
    standing.set(key, at);
    queue.add(key, at);
  };
  const drop = (key: string): void => {
    standing.delete(key);
    queue.settled();
  };
  return { queue, fired, add, drop, timers, standing };
}

describe('createDueQueue', () => {
  it("should fire only the duties its owner says still stand, each once, in time order", marbles((m) => {
    const { fired, add, drop, standing } = setup(m);
    add('a', 10);
    add('b', 20);
    add('c', 30);
    // Taken over by a later time: the first entry of b no longer stands.
    standing.set('b', 25);
    m.scheduler.schedule(() => drop('c'), 5);
    // Added twice for one time (a pause restored while its first entry waits): it fires once.
    add('a', 10);
    m.scheduler.schedule(() => expect(fired).toEqual(['a@10']), 40);
  }));

  it('should disarm its timer once nothing stands, so an idle process can exit', marbles((m) => {
    const { drop, add, timers, fired } = setup(m);
    add('a', 10);
    add('b', 20);
    m.scheduler.schedule(() => drop('a'), 3);
    m.scheduler.schedule(() => drop('b'), 4);
    m.expect(timers.log).toHaveSubscriptions('^---!');
    m.scheduler.schedule(() => expect(fired).toEqual([]), 30);
  }));

  it('should go on in time order after most duties went and the heap was rebuilt', marbles((m) => {
    const { fired, add, drop } = setup(m);
    for (let i = 0; i < 1000; i += 1) add(`k${i}`, 1000 - i);
    for (let i = 0; i < 1000; i += 1) if (i % 10 !== 0) drop(`k${i}`);
    add('late', 2000);
    const kept = Array.from({ length: 100 }, (_, j) => 99 - j).map((j) => `k${10 * j}@${1000 - 10 * j}`);
    m.scheduler.schedule(() => expect(fired).toEqual([...kept, 'late@2000']), 2001);
  }));
});
