import { marbles } from 'rxjs-marbles/jest';
import { from, map, NEVER, of, type Observable } from 'rxjs';
import { EngineError, inference, type Engine, type EngineEvent, type LoopState, type RunResult } from '../../src/index.js';
import { createTestLoopPorts, createTestRuntime, engineOf, FINISHED, loopState } from './helpers.js';

const events = (...list: EngineEvent[]): Observable<EngineEvent> => from(list);
const iterations = map((state: LoopState) => state.iteration);
const outcomes = map((state: LoopState) => state.outcome?.status ?? 'open');
const finished: EngineEvent = { type: 'finished', model: 'm-1', usage: { input_tokens: 12, output_tokens: 3 }, stop_reason: 'stop' };

describe('inference', () => {
  it('should stream text deltas with the cumulative text and finish with usage and stop reason', marbles((m) => {
    const stream = m.cold<EngineEvent>('-a-b-(f|)', { a: { type: 'text-delta', delta: 'Hel' }, b: { type: 'text-delta', delta: 'lo' }, f: finished });
    const rt = createTestRuntime({ engine: { name: 'cold', model: 'm-1', infer: () => stream } });
    const events: unknown[] = [];
    rt.events$().subscribe((e) => {
      if (e.type === 'text-delta') events.push([e.at, e.delta, e.cumulative]);
      if (e.type === 'inference-finished') events.push([e.at, e.text, e.usage, e.stop_reason, e.duration_ms, e.model]);
    });
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'hi' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    expect(events).toEqual([
      [1, 'Hel', 'Hel'],
      [3, 'lo', 'Hello'],
      [5, 'Hello', { input_tokens: 12, output_tokens: 3 }, 'stop', 5, 'm-1'],
    ]);
    expect(result?.turn.blocks.map((b) => b.kind)).toEqual(['user', 'llm_text']);
    m.expect(stream).toHaveSubscriptions('^----!');
  }));

  it('should keep reasoning as its own block and event', () => {
    const engine: Engine = { name: 'r', model: 'r', infer: () => events({ type: 'reasoning-delta', delta: 'hmm' }, { type: 'text-delta', delta: 'ok' }, finished) };
    const rt = createTestRuntime({ engine });
    const labels: string[] = [];
    rt.labels$().subscribe((l) => labels.push(l));
    rt.session.start({ prompt: 'hi' });
    expect(labels).toContain('reasoning-delta');
    expect(rt.session.turns()[0]?.blocks.map((b) => b.kind)).toEqual(['user', 'reasoning', 'llm_text']);
  });

  it('should turn an engine failure into an inference-failed event and a failed run, leaving the session usable', marbles((m) => {
    let calls = 0;
    const engine: Engine = {
      name: 'flaky',
      model: 'f',
      infer: () => (++calls === 1 ? m.cold<EngineEvent>('--#', {}, new EngineError('upstream 500', 'http_500', 500)) : of(finished)),
    };
    const rt = createTestRuntime({ engine });
    const failures: unknown[] = [];
    rt.events$().subscribe((e) => e.type === 'inference-failed' && failures.push([e.at, e.message, e.code]));
    const results: RunResult[] = [];
    m.scheduler.schedule(() => rt.session.start({ prompt: 'one' }).result$.subscribe((r) => results.push(r)), 0);
    m.scheduler.schedule(() => rt.session.start({ prompt: 'two' }).result$.subscribe((r) => results.push(r)), 5);
    m.flush();
    expect(failures).toEqual([[2, 'upstream 500', 'http_500']]);
    expect(results.map((r) => [r.status, r.error])).toEqual([
      ['failed', 'upstream 500'],
      ['completed', undefined],
    ]);
  }));

  it('should give repeated or missing tool call ids unique ones', () => {
    const engine: Engine = {
      name: 'dup',
      model: 'd',
      infer: (request) =>
        request.blocks.some((b) => b.kind === 'tool_use')
          ? of(finished)
          : events({ type: 'tool-call', id: 'x', name: 'echo', args: { text: '1' } }, { type: 'tool-call', id: 'x', name: 'echo', args: { text: '2' } }, { type: 'tool-call', id: '', name: 'echo', args: { text: '3' } }, finished),
    };
    const rt = createTestRuntime({ engine });
    rt.session.start({ prompt: 'hi' });
    const ids = rt.session.turns()[0]?.blocks.flatMap((b) => (b.kind === 'tool_use' ? [b.payload.id] : []));
    expect(new Set(ids).size).toBe(3);
    expect(ids?.[0]).toBe('x');
  });

  it('should not subscribe to the engine once the run is cancelled', marbles((m) => {
    const rt = createTestRuntime({ engine: { name: 'hang', model: 'h', infer: () => NEVER } });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'hi' }), 0);
    m.scheduler.schedule(() => rt.session.cancel(), 3);
    m.expect(rt.labels$((l) => l.startsWith('run-ended'))).toBeObservable('---k', { k: 'run-ended:cancelled' });
  }));

  it('should unsubscribe from the engine when it completes, and from its source when that completes', marbles((m) => {
    const engine = m.cold<EngineEvent>('--(f|)', { f: FINISHED });
    const source = m.hot<LoopState>('-s----|', { s: loopState() });
    const { ports } = createTestLoopPorts({ engine: engineOf(engine) });
    m.expect(source.pipe(inference(ports), iterations)).toBeObservable('---a--|', { a: 1 });
    m.expect(source).toHaveSubscriptions('^-----!');
    m.expect(engine).toHaveSubscriptions('-^-!');
  }));

  it('should unsubscribe from an engine that errors, ending that state as failed', marbles((m) => {
    const engine = m.cold<EngineEvent>('--#', {}, new EngineError('upstream 500', 'http_500', 500));
    const source = m.hot<LoopState>('-s----|', { s: loopState() });
    const { ports } = createTestLoopPorts({ engine: engineOf(engine) });
    m.expect(source.pipe(inference(ports), outcomes)).toBeObservable('---f--|', { f: 'failed' });
    m.expect(source).toHaveSubscriptions('^-----!');
    m.expect(engine).toHaveSubscriptions('-^-!');
  }));

  it('should unsubscribe from the engine when its source errors', marbles((m) => {
    const engine = m.cold<EngineEvent>('-----(f|)', { f: FINISHED });
    const source = m.hot<LoopState>('-s-#', { s: loopState() });
    const { ports } = createTestLoopPorts({ engine: engineOf(engine) });
    m.expect(source.pipe(inference(ports), iterations)).toBeObservable('---#');
    m.expect(source).toHaveSubscriptions('^--!');
    m.expect(engine).toHaveSubscriptions('-^-!');
  }));

  it('should end the state as failed and unsubscribe from the engine when folding its answer throws', marbles((m) => {
    const engine = m.cold<EngineEvent>('-d--d--(f|)', { d: { type: 'text-delta', delta: 'Hel' }, f: FINISHED });
    const source = m.hot<LoopState>('-s------|', { s: loopState() });
    const { ports } = createTestLoopPorts({ engine: engineOf(engine) });
    // A subscriber of the hub that throws at the first delta: the state ends failed, the engine is let go.
    const publish = ports.publish;
    const throwing = { ...ports, publish: (event: Parameters<typeof publish>[0]) => (event.type === 'text-delta' ? (() => { throw new Error('a subscriber failed'); })() : publish(event)) };
    m.expect(source.pipe(inference(throwing), outcomes)).toBeObservable('--f-----|', { f: 'failed' });
    m.expect(engine).toHaveSubscriptions('-^!');
  }));

  it('should unsubscribe from its source and the engine when unsubscribed (cancelled)', marbles((m) => {
    const engine = m.cold<EngineEvent>('-d-----(f|)', { d: { type: 'text-delta', delta: 'Hel' }, f: FINISHED });
    const source = m.hot<LoopState>('-s------|', { s: loopState() });
    const { ports } = createTestLoopPorts({ engine: engineOf(engine) });
    m.expect(source.pipe(inference(ports), iterations), '^---!').toBeObservable('-----');
    m.expect(source).toHaveSubscriptions('^---!');
    m.expect(engine).toHaveSubscriptions('-^--!');
  }));
});

describe('inference with a misbehaving engine', () => {
  it('should fail the run, not the session, when the engine throws instead of erroring', () => {
    const engine: Engine = { name: 'bad', model: 'b', infer: () => { throw new TypeError('engine bug'); } };
    const rt = createTestRuntime({ engine });
    const labels: string[] = [];
    rt.labels$().subscribe((l) => labels.push(l));
    let result: RunResult | undefined;
    rt.session.start({ prompt: 'hi' }).result$.subscribe((r) => (result = r));
    expect(result).toMatchObject({ status: 'failed', error: 'engine bug' });
    expect(labels).toEqual(['run-started', 'inference-started', 'inference-failed', 'run-ended:failed']);
    expect(rt.session.running).toBe(false);
  });

  it('should end the run as failed with run-ended when a bug errors the loop', () => {
    const rt = createTestRuntime({ responses: [{ text: 'x' }], onSnapshot: () => ({ subscribe: () => { throw new Error('not an observable'); } }) as never });
    const labels: string[] = [];
    rt.labels$().subscribe((l) => labels.push(l));
    let result: RunResult | undefined;
    rt.session.start({ prompt: 'hi' }).result$.subscribe((r) => (result = r));
    expect(result?.status).toBe('failed');
    expect(labels.at(-1)).toBe('run-ended:failed');
  });

  it('should refuse tool arguments nested deeper than 128 levels where they enter, with a tool error the model sees and no pause', marbles((m) => {
    // Built iteratively: 3 000 levels, as a hostile model emits them.
    let deep: unknown = 1;
    for (let level = 0; level < 3000; level += 1) deep = { a: deep };
    const rt = createTestRuntime({
      responses: [
        { tool_calls: [{ id: 'call_deep', name: 'echo', arguments: deep as Record<string, unknown> }] },
        { text: 'sorry' },
      ],
      stepMode: true,
    });
    const labels: string[] = [];
    rt.labels$().subscribe((label) => labels.push(label));
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'hi' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    // Nothing paused and nothing ran; the model was asked again and the run completed.
    expect(labels.filter((label) => /^(paused|tool-execution-started)/.test(label))).toEqual([]);
    expect(rt.tool.calls).toEqual([]);
    expect(result?.status).toBe('completed');
    const blocks = result?.turn.blocks ?? [];
    expect(blocks.map((block) => block.kind)).toEqual(['user', 'tool_call', 'tool_use', 'llm_text']);
    expect(blocks[1]?.payload).toEqual({ id: 'call_deep', name: 'echo', args: {} });
    expect(blocks[2]?.payload).toEqual({ id: 'call_deep', result: null, error: 'arguments nested too deeply' });
  }));

  it('should give a call whose id repeats one of an earlier step of the turn, or names a property of every object, an id of its own', () => {
    const rt = createTestRuntime({
      responses: [
        { tool_calls: [{ id: 'same', name: 'echo', arguments: { text: 'a' } }] },
        { tool_calls: [{ id: 'same', name: 'echo', arguments: { text: 'b' } }, { id: '__proto__', name: 'echo', arguments: { text: 'c' } }] },
        { text: 'done' },
      ],
    });
    let result: RunResult | undefined;
    rt.session.start({ prompt: 'hi' }).result$.subscribe((r) => (result = r));
    const calls = (result?.turn.blocks ?? []).filter((block) => block.kind === 'tool_call').map((block) => (block.payload as { id: string }).id);
    expect(calls[0]).toBe('same');
    expect(new Set(calls).size).toBe(3);
    expect(calls.slice(1)).not.toContain('__proto__');
    // Every call ran and has its own result.
    expect(rt.tool.calls).toHaveLength(3);
  });

  it('should keep the calls of one answer whose arguments fit 1 MiB of text together, and refuse the rest as too large', () => {
    const big = 'x'.repeat(600 * 1024);
    const rt = createTestRuntime({
      responses: [
        { tool_calls: [{ id: 'a', name: 'echo', arguments: { text: big } }, { id: 'b', name: 'echo', arguments: { text: big } }, { id: 'c', name: 'echo', arguments: { text: 'small' } }] },
        { text: 'done' },
      ],
    });
    let result: RunResult | undefined;
    rt.session.start({ prompt: 'hi' }).result$.subscribe((r) => (result = r));
    const uses = (result?.turn.blocks ?? []).filter((block) => block.kind === 'tool_use').map((block) => block.payload as { id: string; error?: string });
    expect(uses.find((use) => use.id === 'b')?.error).toBe('arguments too large');
    expect(uses.filter((use) => use.error === undefined).map((use) => use.id).sort()).toEqual(['a', 'c']);
  });
});
