import { marbles, type Context } from 'rxjs-marbles/jest';
import { defer, map, tap, type Observable } from 'rxjs';
import { z } from 'zod';
import { defineTool, toolLoop, type Engine, type EngineEvent, type LoopState, type RunResult, type StepController, type ToolCallBlock, type ToolUseBlock } from '../../src/index.js';
import { createVirtualTool, labelOf } from '../../src/testing/index.js';
import { callEcho, createProbe, createTestLoopPorts, createTestRuntime, FINISHED, isPauseOrEnd, loopState, PAUSE_LABELS as L, toolOf } from './helpers.js';

const toolUses = (result: RunResult | undefined): ToolUseBlock['payload'][] =>
  (result?.turn.blocks ?? []).filter((b): b is ToolUseBlock => b.kind === 'tool_use').map((b) => b.payload);

/** Keeps the result of a run started at `frame`, for assertions after flush. */
function startAt(m: { scheduler: { schedule(work: () => void, delay: number): unknown } }, frame: number, start: () => Observable<RunResult>) {
  const box: { result?: RunResult } = {};
  m.scheduler.schedule(() => start().subscribe((result) => (box.result = result)), frame);
  return box;
}

/** Where each state the loop emits goes next (`start` for its input), or how the run ended. */
const phases = map((state: LoopState) => state.outcome?.status ?? state.next ?? 'start');

/**
 * The loop's ports with test observables: the first inference asks for the `slow` tool, the second
 * answers; the controller's pauses are logged in `pauses.log`.
 */
function loopPorts(m: Pick<Context, 'cold'>, marbles: { first: string; tool: string; second: string }) {
  const first = m.cold<EngineEvent>(marbles.first, { c: { type: 'tool-call', id: 'call_1', name: 'slow', args: {} }, f: FINISHED });
  const second = m.cold<EngineEvent>(marbles.second, { f: FINISHED });
  const tool = m.cold(marbles.tool, { r: 'done' });
  let inferences = 0;
  const engine: Engine = { name: 'test', model: 'm-1', infer: () => (inferences++ === 0 ? first : second) };
  const { ports, published } = createTestLoopPorts({ engine, tools: [toolOf('slow', tool)] });
  const pauses = createProbe(m);
  const controller: StepController = { ...ports.controller, pause: (request) => pauses.watch(ports.controller.pause(request)) };
  return { ports: { ...ports, controller }, published, first, second, tool, pauses };
}

describe('toolLoop', () => {
  it('should not pause after inference when no tool calls are pending', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ text: 'hello there' }], stepMode: true });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('e', L);
    const run = startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.flush();
    expect(run.result).toMatchObject({ status: 'completed' });
  }));

  it('should pause after inference and after tools, each until continued', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true, tool: createVirtualTool({ delayMs: 10 }) });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 4ms r 9ms q 4ms (re)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_1' }), 5);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_2' }), 20);
    m.flush();
    expect(rt.tool.calls.map((call) => call.at)).toEqual([5]);
  }));

  it('should run the resumed tool only after submit has returned, in the same virtual frame', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true });
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => {
      expect(rt.sw.controller.submit({ pause_id: 'pause_1' })).toMatchObject({ ok: true });
      expect(rt.tool.calls).toHaveLength(0);
    }, 3);
    m.flush();
    expect(rt.tool.calls.map((call) => call.at)).toEqual([3]);
  }));

  it('should resolve each pause at its deadline with the continue action by default', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 29999ms (tq) 29996ms (te)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
  }));

  it('should deny every call at the deadline under the deny timeout action', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'ok' }], stepMode: true, pauseTimeoutMs: 1000, timeoutAction: 'deny' });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 999ms (tq) 996ms (te)', L);
    const run = startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.flush();
    expect(rt.tool.calls).toHaveLength(0);
    expect(toolUses(run.result)).toEqual([{ id: 'call_1_1', result: null, error: 'denied by operator: the pause deadline passed' }]);
  }));

  it('should end the run as failed at the deadline under the abort timeout action', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a')], stepMode: true, pauseTimeoutMs: 1000, timeoutAction: 'abort' });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 999ms (tf)', L);
    const run = startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.flush();
    expect(rt.tool.calls).toHaveLength(0);
    expect(run.result?.error).toMatch(/deadline/);
  }));

  it('should resolve a pause at once on cancel, run no tool and publish no later pause', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'never' }], stepMode: true });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 4ms (ck)', L);
    const run = startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => expect(rt.session.cancel()).toBe(true), 5);
    m.flush();
    expect(rt.tool.calls).toHaveLength(0);
    expect(run.result).toMatchObject({ status: 'cancelled' });
    expect(rt.sw.controller.get('pause_1')).toBeUndefined();
    // The turn keeps what the model asked for, answered as not run so the history stays valid.
    expect(run.result?.turn.blocks.map((b) => b.kind)).toEqual(['user', 'tool_call', 'tool_use']);
    expect(toolUses(run.result)).toEqual([{ id: 'call_1_1', result: null, error: 'not run: the run ended (cancelled) before this call ran' }]);
  }));

  it('should tear down the engine call on cancel (subscription marbles)', marbles((m) => {
    const stream = m.cold<EngineEvent>('--a------b|', { a: { type: 'text-delta', delta: 'Hel' }, b: { type: 'text-delta', delta: 'lo' } });
    const engine: Engine = { name: 'cold', model: 'cold-1', infer: () => stream };
    const rt = createTestRuntime({ engine });
    m.expect(rt.labels$((label) => label.startsWith('text-delta') || label.startsWith('run-ended'))).toBeObservable('--a-k', {
      a: 'text-delta:"Hel"',
      k: 'run-ended:cancelled',
    });
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => rt.session.cancel(), 4);
    m.expect(stream).toHaveSubscriptions('^---!');
  }));

  it('should tear down running tools on cancel and abort their signals (subscription marbles)', marbles((m) => {
    const slow = m.cold('----------r|', { r: 'late' });
    const signals: AbortSignal[] = [];
    const rt = createTestRuntime({
      responses: [callEcho('a')],
      tools: [{ name: 'echo', description: 'slow', parameters: { type: 'object' }, execute: (_args: unknown, { signal }: { signal: AbortSignal }) => defer(() => (signals.push(signal), slow)) }],
    });
    m.expect(rt.labels$((label) => /^(tool-|run-ended)/.test(label))).toBeObservable('(rs)k', {
      r: 'tool-call-requested:call_1_1',
      s: 'tool-execution-started:call_1_1',
      k: 'run-ended:cancelled',
    });
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => rt.session.cancel(), 4);
    m.expect(slow).toHaveSubscriptions('^---!');
    m.scheduler.schedule(() => expect(signals.map((s) => s.aborted)).toEqual([true]), 5);
  }));

  it('should pause at the next point when step mode is enabled mid-run', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], tool: createVirtualTool({ delayMs: 10 }) });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('10ms q 4ms (re)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => rt.sw.controller.enable(rt.session.session_id), 5);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_1' }), 15);
  }));

  it('should release a pause when step mode is disabled and not pause again', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('a'), { text: 'done' }], stepMode: true });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 6ms (oe)', L);
    startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => expect(rt.sw.controller.disable(rt.session.session_id)).toBe(1), 7);
  }));

  it('should deny chosen calls with the reason the model sees, and run the others', marbles((m) => {
    const seen: unknown[] = [];
    const rt = createTestRuntime({
      responses: [{ tool_calls: [{ id: 'a', name: 'echo', arguments: { text: 'one' } }, { id: 'b', name: 'echo', arguments: { text: 'two' } }] }, { text: 'ok' }],
      stepMode: true,
    });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 2ms (dq) (re)', L);
    const run = startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_1', action: 'deny', tool_call_ids: ['a'], reason: 'too risky' }), 3);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_2' }), 7);
    rt.events$().pipe(tap((event) => event.type === 'inference-started' && seen.push(event.at))).subscribe();
    m.flush();
    expect(toolUses(run.result)).toEqual([
      { id: 'a', result: null, error: 'denied by operator: too risky' },
      { id: 'b', result: { echoed: 'two' } },
    ]);
    expect(rt.tool.calls.map((call) => call.args)).toEqual([{ text: 'two' }]);
  }));

  it('should run edited arguments and keep the original ones in the block metadata', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('original'), { text: 'ok' }], stepMode: true });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('p 2ms (xq) (re)', L);
    const run = startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.scheduler.schedule(() => {
      const refused = rt.sw.controller.submit({ pause_id: 'pause_1', action: 'edit', edits: { call_1_1: { text: 42 } } });
      expect(refused).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
      rt.sw.controller.submit({ pause_id: 'pause_1', action: 'edit', edits: { call_1_1: { text: 'edited' } } });
    }, 3);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: 'pause_2' }), 7);
    m.flush();
    expect(rt.tool.calls.map((call) => call.args)).toEqual([{ text: 'edited' }]);
    const call = run.result?.turn.blocks.find((b): b is ToolCallBlock => b.kind === 'tool_call');
    expect(call?.payload.args).toEqual({ text: 'edited' });
    expect(call?.metadata).toMatchObject({ original_args: { text: 'original' }, edited: true });
    expect(toolUses(run.result)).toEqual([{ id: 'call_1_1', result: { echoed: 'edited' } }]);
  }));

  it('should end with max_iterations and keep the last tool results', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('1'), callEcho('2'), callEcho('3')], maxIterations: 2 });
    m.expect(rt.labels$(isPauseOrEnd)).toBeObservable('m', L);
    const run = startAt(m, 0, () => rt.session.start({ prompt: 'hi' }).result$);
    m.flush();
    expect(toolUses(run.result).map((use) => use.result)).toEqual([{ echoed: '1' }, { echoed: '2' }]);
  }));

  it('should run the tool, ask the engine again and finish when a subscriber continues every pause', marbles((m) => {
    const requests: number[] = [];
    const base = createTestRuntime({ responses: [] }).sw.engine;
    void base;
    const rt = createTestRuntime({ responses: [callEcho('ping'), { text: 'the tool said ping' }], stepMode: true });
    const engine = rt.sw.engine;
    const counted = { ...engine, infer: (request: Parameters<Engine['infer']>[0]) => (requests.push(request.blocks.length), engine.infer(request)) };
    const rt2 = createTestRuntime({ engine: counted, stepMode: true });
    let pauses = 0;
    rt2.events$().subscribe((event) => {
      if (event.type !== 'paused') return;
      pauses += 1;
      rt2.sw.controller.submit({ pause_id: event.pause.pause_id });
    });
    // Each continue resumes the loop on the scheduler, after submit returned: all within frame 0.
    m.expect(rt2.labels$(isPauseOrEnd)).toBeObservable('(prqre)', L);
    const run = startAt(m, 0, () => rt2.session.start({ prompt: 'hi' }).result$);
    m.flush();
    expect(pauses).toBeGreaterThanOrEqual(1);
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(toolUses(run.result)[0]?.result).toEqual({ echoed: 'ping' });
    expect(run.result?.turn.blocks.at(-1)).toMatchObject({ kind: 'llm_text', payload: { text: 'the tool said ping' } });
    expect(run.result?.status).toBe('completed');
  }));

  it('should run hundreds of zero-latency steps without growing the stack', () => {
    const steps = 400;
    // How deep the stack is when each call runs (the tool is called synchronously, inside the loop).
    const depths: number[] = [];
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = Infinity;
    const echo = defineTool({
      name: 'echo',
      description: 'Echoes the text.',
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => {
        depths.push((new Error().stack ?? '').split('\n').length);
        return { text };
      },
    });
    const rt = createTestRuntime({ tools: [echo], responses: [...Array.from({ length: steps }, (_, i) => callEcho(String(i))), { text: 'done' }], maxIterations: steps + 1 });
    let result: RunResult | undefined;
    try {
      rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r));
    } finally {
      Error.stackTraceLimit = limit;
    }
    expect(result?.status).toBe('completed');
    expect(toolUses(result)).toHaveLength(steps);
    // The phases of a few steps may recurse before a trampoline unwinds them; later steps go no deeper.
    expect(depths).toHaveLength(steps);
    expect(Math.max(...depths)).toBe(Math.max(...depths.slice(0, 32)));
  });

  it('should keep a flat stack when step mode is on and every pause is continued synchronously', marbles((m) => {
    const steps = 300;
    const rt = createTestRuntime({ responses: [...Array.from({ length: steps }, (_, i) => callEcho(String(i))), { text: 'done' }], maxIterations: steps + 1, stepMode: true });
    let pauses = 0;
    rt.events$().subscribe((event) => {
      if (event.type !== 'paused') return;
      pauses += 1;
      rt.sw.controller.submit({ pause_id: event.pause.pause_id });
    });
    let result: RunResult | undefined;
    rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r));
    m.flush();
    expect(result?.status).toBe('completed');
    expect(pauses).toBe(2 * steps);
  }));

  it('should unsubscribe from each inference and tool call as it completes, and complete after the last', marbles((m) => {
    const { ports, first, tool, second } = loopPorts(m, { first: '--(cf|)', tool: '--(r|)', second: '--(f|)' });
    const source = m.hot<LoopState>('-s|', { s: loopState() });
    m.expect(source.pipe(toolLoop(ports), phases)).toBeObservable('-s-a-b-(cz|)', {
      s: 'start',
      a: 'after_inference',
      b: 'after_tools',
      c: 'after_inference',
      z: 'completed',
    });
    m.expect(source).toHaveSubscriptions('^-!');
    m.expect(first).toHaveSubscriptions('-^-!');
    m.expect(tool).toHaveSubscriptions('---^-!');
    m.expect(second).toHaveSubscriptions('-----^-!');
  }));

  it('should unsubscribe from an engine that errors and end the run as failed, running no tool', marbles((m) => {
    const { ports, first, tool } = loopPorts(m, { first: '--#', tool: '--(r|)', second: '--(f|)' });
    const source = m.hot<LoopState>('-s|', { s: loopState() });
    m.expect(source.pipe(toolLoop(ports), phases)).toBeObservable('-s-(f|)', { s: 'start', f: 'failed' });
    m.expect(first).toHaveSubscriptions('-^-!');
    m.expect(tool).toHaveSubscriptions([]);
  }));

  it('should unsubscribe from the running inference when its source errors', marbles((m) => {
    const { ports, first } = loopPorts(m, { first: '----(cf|)', tool: '--(r|)', second: '--(f|)' });
    const source = m.hot<LoopState>('-s-#', { s: loopState() });
    m.expect(source.pipe(toolLoop(ports), phases)).toBeObservable('-s-#', { s: 'start' });
    m.expect(source).toHaveSubscriptions('^--!');
    m.expect(first).toHaveSubscriptions('-^-!');
  }));

  it('should unsubscribe from its source and the running tool when unsubscribed (cancelled)', marbles((m) => {
    const { ports, first, tool, second } = loopPorts(m, { first: '--(cf|)', tool: '-----(r|)', second: '--(f|)' });
    const source = m.hot<LoopState>('-s-------|', { s: loopState() });
    m.expect(source.pipe(toolLoop(ports), phases), '^---!').toBeObservable('-s-a', { s: 'start', a: 'after_inference' });
    m.expect(source).toHaveSubscriptions('^---!');
    m.expect(first).toHaveSubscriptions('-^-!');
    m.expect(tool).toHaveSubscriptions('---^!');
    m.expect(second).toHaveSubscriptions([]);
  }));

  it('should unsubscribe from an open pause when unsubscribed (cancelled), resolving it as cancelled', marbles((m) => {
    const { ports, published, tool, pauses } = loopPorts(m, { first: '--(cf|)', tool: '--(r|)', second: '--(f|)' });
    ports.controller.enable('sess_1');
    const source = m.hot<LoopState>('-s-------|', { s: loopState() });
    m.expect(source.pipe(toolLoop(ports), phases), '^----!').toBeObservable('-s-a', { s: 'start', a: 'after_inference' });
    m.expect(pauses.log).toHaveSubscriptions('---^-!');
    m.expect(tool).toHaveSubscriptions([]);
    m.flush();
    expect(published.map(labelOf).filter((label) => /^(paused|resumed)/.test(label))).toEqual(['paused:after_inference', 'resumed:cancelled']);
  }));
});
