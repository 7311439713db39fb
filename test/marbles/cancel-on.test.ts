import { marbles } from 'rxjs-marbles/jest';
import { finalize, Observable, of } from 'rxjs';
import { cancelOn } from '../../src/index.js';

describe('cancelOn', () => {
  it('should unsubscribe the source at the notification, then complete', marbles((m) => {
    const source = m.cold('--a--b------c|');
    const cancel = m.hot('-------x');
    m.expect(source.pipe(cancelOn(cancel))).toBeObservable('--a--b-|');
    m.expect(source).toHaveSubscriptions('^------!');
  }));

  it('should run the source teardown before downstream completion', () => {
    const order: string[] = [];
    let trigger: () => void = () => undefined;
    const notifier = new Observable<void>((s) => void (trigger = () => s.next()));
    const source = new Observable<never>(() => () => order.push('source torn down'));
    source.pipe(cancelOn(notifier), finalize(() => order.push('finalized'))).subscribe({ complete: () => order.push('completed') });
    trigger();
    expect(order).toEqual(['source torn down', 'completed', 'finalized']);
  });

  it('should pass source errors and completion through', marbles((m) => {
    m.expect(m.cold('-a-#').pipe(cancelOn(m.hot('------x')))).toBeObservable('-a-#');
    m.expect(m.cold('-a|').pipe(cancelOn(m.hot('------x')))).toBeObservable('-a|');
  }));

  it('should complete at once, never subscribing the source, when the notifier fires during subscribe', marbles((m) => {
    const source = m.cold('--a|');
    m.expect(source.pipe(cancelOn(of('x')))).toBeObservable('|');
    m.expect(source).toHaveSubscriptions([]);
  }));
});
