import { marbles } from 'rxjs-marbles/jest';
import { map } from 'rxjs';
import { snapshotHook, type LoopState, type Snapshot } from '../../src/index.js';
import { labelOf } from '../../src/testing/index.js';
import { callEcho, createTestLoopPorts, createTestRuntime, loopState } from './helpers.js';

const passed = map((state: LoopState) => state.iteration);

describe('snapshotHook', () => {
  it('should call the hook at pre_inference, post_inference and post_tools with the turn so far', () => {
    const seen: string[] = [];
    const rt = createTestRuntime({
      responses: [callEcho('a'), { text: 'done' }],
      onSnapshot: (s: Snapshot) => void seen.push(`${s.phase}:${s.iteration}:${s.blocks.map((b) => b.kind).join(',')}`),
    });
    rt.session.start({ prompt: 'hi' });
    expect(seen).toEqual([
      'pre_inference:0:user',
      'post_inference:1:user,tool_call',
      'post_tools:1:user,tool_call,tool_use',
      'pre_inference:1:user,tool_call,tool_use',
      'post_inference:2:user,tool_call,tool_use,llm_text',
    ]);
  });

  it('should wait for a hook that returns an Observable', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'x' }], onSnapshot: (s: Snapshot) => (s.phase === 'pre_inference' ? m.cold('-----|') : undefined) });
    m.expect(rt.labels$((l) => l === 'inference-started')).toBeObservable('5ms i', { i: 'inference-started' });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'hi' }), 0);
  }));

  it('should log a failing hook as a warning and go on', () => {
    const rt = createTestRuntime({ responses: [{ text: 'x' }], onSnapshot: () => { throw new Error('disk full'); } });
    const logs: string[] = [];
    rt.events$().subscribe((e) => e.type === 'log' && logs.push(e.message));
    let status = '';
    rt.session.start({ prompt: 'hi' }).result$.subscribe((r) => (status = r.status));
    expect(status).toBe('completed');
    expect(logs).toEqual(['snapshot hook pre_inference failed: disk full', 'snapshot hook post_inference failed: disk full']);
  });

  it('should unsubscribe from the hook when it completes, and from its source when that completes', marbles((m) => {
    const hook = m.cold('--|');
    const source = m.hot<LoopState>('-s----|', { s: loopState() });
    const { ports } = createTestLoopPorts();
    m.expect(source.pipe(snapshotHook('post_tools', ports, () => hook), passed)).toBeObservable('---s--|', { s: 0 });
    m.expect(source).toHaveSubscriptions('^-----!');
    m.expect(hook).toHaveSubscriptions('-^-!');
  }));

  it('should unsubscribe from a hook that errors, log it and pass the state on', marbles((m) => {
    const hook = m.cold('--#', {}, new Error('disk full'));
    const source = m.hot<LoopState>('-s----|', { s: loopState() });
    const { ports, published } = createTestLoopPorts();
    m.expect(source.pipe(snapshotHook('post_tools', ports, () => hook), passed)).toBeObservable('---s--|', { s: 0 });
    m.expect(hook).toHaveSubscriptions('-^-!');
    m.flush();
    expect(published.map(labelOf)).toEqual(['log:warn']);
  }));

  it('should unsubscribe from the hook when its source errors', marbles((m) => {
    const hook = m.cold('-----|');
    const source = m.hot<LoopState>('-s-#', { s: loopState() });
    const { ports } = createTestLoopPorts();
    m.expect(source.pipe(snapshotHook('post_tools', ports, () => hook), passed)).toBeObservable('---#');
    m.expect(source).toHaveSubscriptions('^--!');
    m.expect(hook).toHaveSubscriptions('-^-!');
  }));

  it('should unsubscribe from its source and the hook when unsubscribed (cancelled)', marbles((m) => {
    const hook = m.cold('-----|');
    const source = m.hot<LoopState>('-s------|', { s: loopState() });
    const { ports } = createTestLoopPorts();
    m.expect(source.pipe(snapshotHook('post_tools', ports, () => hook), passed), '^---!').toBeObservable('-----');
    m.expect(source).toHaveSubscriptions('^---!');
    m.expect(hook).toHaveSubscriptions('-^--!');
  }));
});
