import { marbles } from 'rxjs-marbles/jest';
import { map } from 'rxjs';
import type { PauseInfo, RunResult } from '../../src/index.js';
import { callEcho, createTestRuntime, labelOf } from './helpers.js';

const labels = map((frame: { event: Parameters<typeof labelOf>[0] }) => labelOf(frame.event));

describe('RunHandle.result', () => {
  it('should carry the final text and the status', async () => {
    const rt = createTestRuntime({ responses: [{ text: 'Checking.', ...callEcho('a') }, { text: 'It said a.' }] });
    const result = await rt.session.start({ prompt: 'go' }).result();
    expect(result).toMatchObject({ status: 'completed', text: 'It said a.' });
  });

  it('should carry an empty text when the model gave none', async () => {
    const rt = createTestRuntime({ responses: [callEcho('a')] });
    const result = await rt.session.start({ prompt: 'go', overrides: { max_iterations: 1 } }).result();
    expect(result).toMatchObject({ status: 'max_iterations', text: '' });
  });
});

describe('RunHandle.events$', () => {
  it('should emit only its own run, replayed from the start, and complete after run-ended', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'one', delay_ms: 5 }] });
    const other = rt.sw.sessions.open({ conv_id: 'c2' });
    // Started before anything subscribes: the handle replays what the run already published.
    // (A group takes as many frames as its characters: `(si)` ends at 4, the answer comes at 5.)
    const run = rt.session.start({ prompt: 'a' });
    other.start({ prompt: 'b' });
    m.expect(run.events$.pipe(labels)).toBeObservable('(si) 1ms (tfe|)', {
      s: 'run-started',
      i: 'inference-started',
      t: 'text-delta:"one"',
      f: 'inference-finished',
      e: 'run-ended:completed',
    });
  }));

  it('should end with the run when its session is closed mid-run', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'slow', delay_ms: 50 }] });
    const run = rt.session.start({ prompt: 'a' });
    m.scheduler.schedule(() => rt.sw.sessions.close('c1'), 10);
    m.expect(run.events$.pipe(labels)).toBeObservable('(si) 6ms (k|)', { s: 'run-started', i: 'inference-started', k: 'run-ended:cancelled' });
  }));

  it('should still give a finished run to a late subscriber, and complete', async () => {
    const rt = createTestRuntime({ responses: [{ text: 'first' }, { text: 'second' }] });
    const first = rt.session.start({ prompt: 'a' });
    await first.result();
    rt.session.start({ prompt: 'b' });
    const seen: string[] = [];
    await new Promise<void>((done) => first.events$.subscribe({ next: (f) => seen.push(labelOf(f.event)), complete: done }));
    expect(seen).toEqual(['run-started', 'inference-started', 'text-delta:"first"', 'inference-finished', 'run-ended:completed']);
  });
});

describe('RunHandle.pauses$', () => {
  it('should emit each pause of its run as it opens, and complete with the run', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true, pauseTimeoutMs: 10 });
    const run = rt.session.start({ prompt: 'go' });
    // after_inference at 0 (times out at 10), after_tools at 10 (times out at 20), then the end.
    m.expect(run.pauses$.pipe(map((pause) => pause.phase))).toBeObservable('a 9ms b 9ms |', { a: 'after_inference', b: 'after_tools' });
  }));

  it('should not replay a pause already resolved to a late subscriber', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true, pauseTimeoutMs: 10 });
    const run = rt.session.start({ prompt: 'go' });
    const first = rt.sw.controller.pending()[0]!;
    rt.sw.controller.submit({ pause_id: first.pause_id });
    // The after_inference pause is over; only the open after_tools one is seen.
    m.expect(run.pauses$.pipe(map((pause) => pause.phase))).toBeObservable('b 9ms |', { b: 'after_tools' });
  }));

  it('should ignore the pauses of another session', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true, pauseTimeoutMs: 10 });
    const other = rt.sw.sessions.open({ conv_id: 'c2' });
    rt.sw.controller.enable(other.session_id);
    const run = rt.session.start({ prompt: 'go', overrides: { max_iterations: 1 } });
    m.scheduler.schedule(() => other.start({ prompt: 'elsewhere' }), 3);
    m.expect(run.pauses$.pipe(map((pause) => pause.session_id))).toBeObservable('a 9ms b 9ms |', { a: 'sess_1', b: 'sess_1' });
  }));
});

describe('RunHandle.nextPause', () => {
  it('should resolve with the next open pause, so a run can be stepped without filtering the hub', async () => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true });
    const run = rt.session.start({ prompt: 'go' });
    const phases: string[] = [];
    for (let pause = await run.nextPause(); pause; pause = await run.nextPause()) {
      phases.push(pause.phase);
      expect(rt.sw.controller.submit({ pause_id: pause.pause_id })).toMatchObject({ ok: true });
    }
    expect(phases).toEqual(['after_inference', 'after_tools']);
    expect((await run.result()).text).toBe('done');
  });

  it('should resolve undefined when the run ends without pausing', async () => {
    const rt = createTestRuntime({ responses: [{ text: 'no tools' }], stepMode: true });
    const run = rt.session.start({ prompt: 'go' });
    const next: PauseInfo | undefined = await run.nextPause();
    expect(next).toBeUndefined();
    const result: RunResult = await run.result();
    expect(result.status).toBe('completed');
  });
});
