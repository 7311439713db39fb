import { marbles } from 'rxjs-marbles/jest';
import type { Snapshot } from '../../src/index.js';
import { callEcho, createTestRuntime } from './helpers.js';

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
});
