import { marbles } from 'rxjs-marbles/jest';
import { of, type Observable } from 'rxjs';
import { concatOrPass } from '../../src/index.js';

describe('concatOrPass', () => {
  it('should emit plain values at once and flatten Observables in order', marbles((m) => {
    const slow = m.cold('--B|');
    const source = m.cold('--a--b--c--|');
    const project = (v: string): string | Observable<string> => (v === 'b' ? slow : v.toUpperCase());
    m.expect(source.pipe(concatOrPass(project))).toBeObservable('--A----BC--|');
    m.expect(slow).toHaveSubscriptions('-----^--!');
  }));

  it('should queue values that arrive while an inner is active', marbles((m) => {
    const inner = m.cold('----x|');
    const source = m.cold('ab|');
    m.expect(source.pipe(concatOrPass((v: string) => (v === 'a' ? inner : v)))).toBeObservable('----x(b|)');
  }));

  it('should handle inners that complete synchronously without recursion', () => {
    const seen: number[] = [];
    of(1, 2, 3)
      .pipe(concatOrPass((v: number) => (v % 2 === 0 ? of(v * 10) : v)))
      .subscribe((v) => seen.push(v));
    expect(seen).toEqual([1, 20, 3]);
  });

  it('should tear down the active inner on unsubscribe and pass errors through', marbles((m) => {
    const inner = m.cold('------x|');
    m.expect(m.cold('a').pipe(concatOrPass(() => inner)), '^--!').toBeObservable('---');
    m.expect(inner).toHaveSubscriptions('^--!');
    m.expect(m.cold('a#').pipe(concatOrPass((v: string) => v))).toBeObservable('a#');
    m.expect(m.cold('a').pipe(concatOrPass((): string => { throw new Error('bug'); })), '^').toBeObservable('#', undefined, new Error('bug'));
  }));
});

describe('concatOrPass with a selector', () => {
  it('should map each inner value with its outer value, and leave plain values alone', marbles((m) => {
    const inner = m.cold('--x|', { x: 10 });
    const source = m.cold('a-b|', { a: 1, b: 2 });
    const project = (v: number): number | Observable<number> => (v === 1 ? inner : v * 100);
    m.expect(source.pipe(concatOrPass(project, (i: number, o: number) => i + o))).toBeObservable('--x(b|)', { x: 11, b: 200 });
  }));
});
