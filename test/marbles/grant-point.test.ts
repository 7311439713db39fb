import { marbles } from 'rxjs-marbles/jest';
import { map } from 'rxjs';
import { createSequentialIds, createStepController, createToolRegistry, pausePoint, type Block, type LoopState, type StepwiseEvent } from '../../src/index.js';
import { argsDigest } from '../../src/core/args-digest.js';
import { createGrantBook } from '../../src/sessions/grant-book.js';
import { createMemoryGrants } from '../../src/store/memory-grants.js';
import { createVirtualTool } from '../../src/testing/index.js';
import { runContext } from './helpers.js';

const call: Block = { id: 'b1', kind: 'tool_call', payload: { id: 'call_1', name: 'echo', args: { text: 'a' } } };
const state: LoopState = { run: runContext(), blocks: [call], iteration: 1 };

/** Step mode on (pauses time out after 100 ms, continuing), and a grant for echo in conversation c1 that expires at 10 ms, on the marble clock. */
function setup(scheduler: Parameters<typeof createStepController>[0]['scheduler'], grantable = true) {
  const published: StepwiseEvent[] = [];
  const publish = (event: StepwiseEvent) => void published.push(event);
  const ids = createSequentialIds();
  const controller = createStepController({ ids, publish, scheduler, resumeScheduler: scheduler }, { pauseTimeoutMs: 100 });
  controller.enable('sess_1');
  const store = createMemoryGrants();
  void store.put({ grant_id: 'g1', scope: 'conversation', conv_id: 'c1', tools: ['echo'], by: 'alice', created_at: 0, expires_at: 10 });
  const grants = createGrantBook({ store, scheduler: scheduler!, ids, targetOf: (conv_id) => ({ conv_id }) });
  const registry = createToolRegistry([grantable ? createVirtualTool() : { ...createVirtualTool(), grantable: false }]);
  return { ports: { controller, registry, grants, publish, ids, scheduler: scheduler! }, published };
}

const summary = map((s: LoopState) => `${s.decision?.action ?? '-'}:${s.decision?.action === 'continue' ? Object.keys(s.decision.args_digests ?? {}).join() : ''}`);

describe('pausePoint with grants', () => {
  it('should let a covered call through at once until the grant expires, then pause', marbles((m) => {
    const { ports, published } = setup(m.scheduler);
    const states = m.cold('5ms a 9ms b', { a: state, b: state });
    // b pauses at 15 ms and waits for its deadline (115 ms): the grant no longer covers it.
    m.expect(states.pipe(pausePoint('after_inference', ports), summary)).toBeObservable('5ms g 109ms t', { g: 'continue:call_1', t: 'continue:call_1' });
    m.flush();
    expect(published.map((event) => event.type)).toEqual(['granted', 'paused', 'resumed']);
    expect(published[0]).toMatchObject({ grant_id: 'g1', tool_call_id: 'call_1', name: 'echo', at: 5, args_digest: argsDigest({ text: 'a' }) });
    expect(published[1]).toMatchObject({ at: 15 });
  }));

  it('should always pause for a tool that is not grantable', marbles((m) => {
    const { ports, published } = setup(m.scheduler, false);
    m.expect(m.cold('a', { a: state }).pipe(pausePoint('after_inference', ports), summary)).toBeObservable('100ms t', { t: 'continue:call_1' });
    m.flush();
    expect(published.map((event) => event.type)).toEqual(['paused', 'resumed']);
  }));

  describe('teardown', () => {
    /** The grants' answer as a cold observable of the test, so its subscription can be asserted. */
    const answering = (m: Parameters<Parameters<typeof marbles>[0]>[0], answer: string) => {
      const covering = m.cold<readonly (string | undefined)[]>(answer, { g: ['g1'], n: [undefined] });
      return { covering, grants: { covering: () => covering } };
    };

    it('should unsubscribe from the grants\' answer once it came, and from its source when that completes', marbles((m) => {
      const { ports } = setup(m.scheduler);
      const { covering, grants } = answering(m, '--(g|)');
      const source = m.hot<LoopState>('-s---|', { s: state });
      m.expect(source.pipe(pausePoint('after_inference', { ...ports, grants }), summary)).toBeObservable('---g-|', { g: 'continue:call_1' });
      m.expect(covering).toHaveSubscriptions('-^-!');
      m.expect(source).toHaveSubscriptions('^----!');
    }));

    it('should unsubscribe from the grants\' answer and its source when the source errors while the grants are read', marbles((m) => {
      const { ports, published } = setup(m.scheduler);
      const { covering, grants } = answering(m, '-----(g|)');
      const source = m.hot<LoopState>('-s-#', { s: state });
      m.expect(source.pipe(pausePoint('after_inference', { ...ports, grants }), summary)).toBeObservable('---#');
      m.expect(covering).toHaveSubscriptions('-^-!');
      m.expect(source).toHaveSubscriptions('^--!');
      m.flush();
      expect(published).toEqual([]);
    }));

    it('should unsubscribe from the grants\' answer and its source when unsubscribed (cancelled), granting nothing', marbles((m) => {
      const { ports, published } = setup(m.scheduler);
      const { covering, grants } = answering(m, '-----(g|)');
      const source = m.hot<LoopState>('-s------|', { s: state });
      m.expect(source.pipe(pausePoint('after_inference', { ...ports, grants }), summary), '^--!').toBeObservable('----');
      m.expect(covering).toHaveSubscriptions('-^-!');
      m.expect(source).toHaveSubscriptions('^--!');
      m.flush();
      expect(published).toEqual([]);
    }));

    it('should unsubscribe from the grants\' answer and then from the pause it made when nothing is covered', marbles((m) => {
      const { ports, published } = setup(m.scheduler);
      const { covering, grants } = answering(m, '--(n|)');
      const source = m.hot<LoopState>('-s------|', { s: state });
      m.expect(source.pipe(pausePoint('after_inference', { ...ports, grants }), summary), '^-----!').toBeObservable('-------');
      m.expect(covering).toHaveSubscriptions('-^-!');
      m.flush();
      expect(published.map((event) => event.type)).toEqual(['paused', 'resumed']);
      expect(published[1]).toMatchObject({ reason: 'cancelled' });
    }));
  });
});
