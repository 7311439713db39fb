import { marbles } from 'rxjs-marbles/jest';
import { map, Subject } from 'rxjs';
import { replayThenLive$ } from '../../src/streams/replay-then-live.js';

const frame = (seq: number) => ({ seq });
const frames = { a: frame(1), b: frame(2), c: frame(3), d: frame(4) };
const seqOf = map(({ seq }: { seq: number }) => String(seq));

describe('replayThenLive$', () => {
  it('should send the frames of before at once, then the live ones they did not cover', marbles((m) => {
    const live = m.hot('  --b--c--d', frames);
    const liveSubs = '    ^--------';
    const expected = '    (ab)-c--d';
    m.expect(replayThenLive$(live, () => [frames.a, frames.b], 0).pipe(seqOf)).toBeObservable(expected, { a: '1', b: '2', c: '3', d: '4' });
    m.expect(live).toHaveSubscriptions(liveSubs);
  }));

  it('should skip the frames up to sinceSeq', marbles((m) => {
    const live = m.hot('  ---c', frames);
    const expected = '    b--c';
    m.expect(replayThenLive$(live, () => [frames.a, frames.b], 1).pipe(seqOf)).toBeObservable(expected, { b: '2', c: '3' });
  }));

  it('should hold live frames while the frames of before are read, then send each once, in order', async () => {
    const live = new Subject<{ seq: number }>();
    let read!: (frames: readonly { seq: number }[]) => void;
    const seen: number[] = [];
    replayThenLive$(live, () => new Promise((done) => (read = done)), 0).subscribe(({ seq }) => seen.push(seq));
    live.next(frame(2));
    live.next(frame(3));
    expect(seen).toEqual([]);
    read([frame(1), frame(2)]);
    await Promise.resolve();
    live.next(frame(4));
    expect(seen).toEqual([1, 2, 3, 4]);
  });

  it('should complete after the frames of before when the live frames end while they are read', async () => {
    const live = new Subject<{ seq: number }>();
    let read!: (frames: readonly { seq: number }[]) => void;
    const seen: string[] = [];
    replayThenLive$(live, () => new Promise((done) => (read = done)), 0).subscribe({ next: ({ seq }) => seen.push(String(seq)), complete: () => seen.push('|') });
    live.complete();
    read([frame(1)]);
    await Promise.resolve();
    expect(seen).toEqual(['1', '|']);
  });

  it('should error when the frames of before cannot be read, and unsubscribe the live frames', async () => {
    const live = new Subject<{ seq: number }>();
    const failure = new Error('store unavailable');
    const errors: unknown[] = [];
    replayThenLive$(live, () => Promise.reject(failure), 0).subscribe({ error: (error: unknown) => errors.push(error) });
    await Promise.resolve();
    await Promise.resolve();
    expect(errors).toEqual([failure]);
    expect(live.observed).toBe(false);
  });

  it('should send nothing a read brings after it was unsubscribed', async () => {
    const live = new Subject<{ seq: number }>();
    let read!: (frames: readonly { seq: number }[]) => void;
    const seen: number[] = [];
    replayThenLive$(live, () => new Promise((done) => (read = done)), 0).subscribe(({ seq }) => seen.push(seq)).unsubscribe();
    read([frame(1)]);
    await Promise.resolve();
    expect(seen).toEqual([]);
    expect(live.observed).toBe(false);
  });
});
