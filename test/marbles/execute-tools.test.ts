import { marbles } from 'rxjs-marbles/jest';
import { map, NEVER, of } from 'rxjs';
import { z } from 'zod';
import { defineTool, executeTools, type LoopState, type RunResult, type ToolUseBlock } from '../../src/index.js';
import { createVirtualTool } from '../../src/testing/index.js';
import { callEcho, createTestLoopPorts, createTestRuntime, loopState, toolCallBlock, toolOf } from './helpers.js';

const toolUses = (result: RunResult | undefined): ToolUseBlock['payload'][] =>
  (result?.turn.blocks ?? []).filter((b): b is ToolUseBlock => b.kind === 'tool_use').map((b) => b.payload);

const threeCalls = { tool_calls: ['a', 'b', 'c'].map((id) => ({ id, name: 'echo', arguments: { text: id } })) };
const isExec = (label: string): boolean => /^tool-(execution-started|result)/.test(label);

/** Each state's tool results, as `ok` or `error`, in call order. */
const resultsOf = map((state: LoopState) =>
  state.blocks
    .filter((b): b is ToolUseBlock => b.kind === 'tool_use')
    .map((b) => (b.payload.error === undefined ? 'ok' : 'error'))
    .join(','),
);

describe('executeTools', () => {
  it('should run tools in parallel, at most maxParallelTools at once, and keep call order', marbles((m) => {
    const rt = createTestRuntime({ responses: [threeCalls, { text: 'ok' }], maxParallelTools: 2, tool: createVirtualTool({ delayMs: 10 }) });
    m.expect(rt.labels$(isExec)).toBeObservable('(ab) 6ms (xcy) 5ms z', {
      a: 'tool-execution-started:a',
      b: 'tool-execution-started:b',
      x: 'tool-result:a',
      y: 'tool-result:b',
      c: 'tool-execution-started:c',
      z: 'tool-result:c',
    });
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    expect(rt.tool.calls.map((call) => call.at)).toEqual([0, 0, 10]);
    expect(toolUses(result).map((use) => use.id)).toEqual(['a', 'b', 'c']);
  }));

  it('should publish tool-execution-started before the tool runs, and its result after', marbles((m) => {
    const order: string[] = [];
    const marker = defineTool({
      name: 'echo',
      description: 'records when it ran',
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => (order.push('tool ran'), { text }),
    });
    const rt = createTestRuntime({ responses: [callEcho('x'), { text: 'ok' }], tools: [marker] });
    rt.labels$(isExec).subscribe((label) => order.push(label));
    m.expect(rt.labels$(isExec)).toBeObservable('(sr)', { s: 'tool-execution-started:call_1_1', r: 'tool-result:call_1_1' });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 0);
    m.flush();
    expect(order).toEqual(['tool-execution-started:call_1_1', 'tool ran', 'tool-result:call_1_1']);
  }));

  it('should time a hanging tool out, abort its signal and give the model an error', marbles((m) => {
    const rt = createTestRuntime({ responses: [callEcho('x'), { text: 'ok' }], toolTimeoutMs: 1000, tool: createVirtualTool({ hang: true }) });
    m.expect(rt.labels$((l) => l.startsWith('tool-result'))).toBeObservable('1s e', { e: 'tool-result:call_1_1:error' });
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    expect(rt.tool.calls[0]?.signal.aborted).toBe(true);
    expect(toolUses(result)[0]?.error).toBe('tool "echo" timed out after 1000 ms');
    expect(result?.status).toBe('completed');
  }));

  it('should retry with exponential backoff under the retry policy', marbles((m) => {
    const tool = createVirtualTool({ failTimes: 2, policy: 'retry' });
    const rt = createTestRuntime({ responses: [callEcho('x'), { text: 'ok' }], tool, toolRetryBaseDelayMs: 100 });
    m.expect(rt.labels$((l) => l.startsWith('tool-result'))).toBeObservable('300ms r', { r: 'tool-result:call_1_1' });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 0);
    m.flush();
    // Attempts at 0, then 100 ms later, then 200 ms after that.
    expect(tool.calls.map((call) => call.at)).toEqual([0, 100, 300]);
  }));

  it('should give up after maxRetries and report the last error', marbles((m) => {
    const tool = createVirtualTool({ failTimes: 10, policy: 'retry', failMessage: 'flaky' });
    const rt = createTestRuntime({ responses: [callEcho('x'), { text: 'ok' }], tool, toolRetryBaseDelayMs: 10, toolMaxRetries: 2 });
    m.expect(rt.labels$((l) => l.startsWith('tool-result'))).toBeObservable('30ms e', { e: 'tool-result:call_1_1:error' });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 0);
    m.flush();
    expect(tool.calls).toHaveLength(3);
  }));

  it('should end the run as failed and stop the other calls under the abort policy', marbles((m) => {
    const signals: AbortSignal[] = [];
    const boom = defineTool({ name: 'boom', description: 'fails', parameters: z.object({}), policy: 'abort', execute: () => { throw new Error('disk on fire'); } });
    const slow = defineTool({ name: 'slow', description: 'hangs', parameters: z.object({}), execute: (_a, { signal }) => (signals.push(signal), NEVER) });
    const rt = createTestRuntime({
      responses: [{ tool_calls: [{ id: 's', name: 'slow', arguments: {} }, { id: 'b', name: 'boom', arguments: {} }] }, { text: 'never' }],
      tools: [boom, slow],
    });
    let result: RunResult | undefined;
    m.expect(rt.labels$((l) => l.startsWith('run-ended'))).toBeObservable('f', { f: 'run-ended:failed' });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    expect(result?.error).toBe('tool "boom" failed under the abort policy: disk on fire');
    expect(signals.map((s) => s.aborted)).toEqual([true]);
  }));

  it('should turn unknown tools, tools outside the allow-list and invalid arguments into error results with events', marbles((m) => {
    const other = defineTool({ name: 'other', description: 'x', parameters: z.object({}), execute: () => 'ran' });
    const rt = createTestRuntime({
      responses: [
        {
          tool_calls: [
            { id: 'u', name: 'nope', arguments: {} },
            { id: 'n', name: 'other', arguments: {} },
            { id: 'i', name: 'echo', arguments: { text: 7 } },
            { id: 'm', name: 'echo', arguments: '{not json' },
          ],
        },
        { text: 'ok' },
      ],
      tools: [createVirtualTool(), other],
    });
    const warnings: unknown[] = [];
    rt.events$().subscribe((e) => e.type === 'log' && warnings.push(e.fields?.['rejected']));
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go', overrides: { tools: ['echo'] } }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    expect(toolUses(result).map((use) => use.error)).toEqual([
      'unknown tool "nope"',
      'tool "other" is not allowed in this run',
      'invalid arguments for echo: text: Invalid input: expected string, received number',
      'invalid arguments for echo: (root): Invalid input: expected object, received string',
    ]);
    expect(warnings).toEqual(['unknown_tool', 'not_allowed', 'invalid_arguments', 'invalid_arguments']);
    expect(result?.status).toBe('completed');
  }));

  it('should advertise only the allowed tools to the model', () => {
    const seen: string[][] = [];
    const other = defineTool({ name: 'other', description: 'x', parameters: z.object({}), execute: () => 'ran' });
    const rt = createTestRuntime({
      engine: { name: 'spy', model: 'spy', infer: (request) => (seen.push(request.tools.map((t) => t.name)), of({ type: 'finished', model: 'spy', usage: { input_tokens: 1, output_tokens: 1 }, stop_reason: 'stop' } as const)) },
      tools: [createVirtualTool(), other],
    });
    rt.session.start({ prompt: 'a', overrides: { tools: ['other'] } });
    rt.session.start({ prompt: 'b' });
    expect(seen).toEqual([['other'], ['echo', 'other']]);
    expect(() => rt.session.start({ prompt: 'c', overrides: { tools: ['ghost'] } })).toThrow(/unknown tool names: ghost/);
  });

  it('should unsubscribe from a tool when it completes, and from its source when that completes', marbles((m) => {
    const tool = m.cold('--(r|)', { r: 'done' });
    const source = m.hot<LoopState>('-s----|', { s: loopState([toolCallBlock('call_1', 'slow')]) });
    const { ports } = createTestLoopPorts({ tools: [toolOf('slow', tool)] });
    m.expect(source.pipe(executeTools(ports), resultsOf)).toBeObservable('---a--|', { a: 'ok' });
    m.expect(source).toHaveSubscriptions('^-----!');
    m.expect(tool).toHaveSubscriptions('-^-!');
  }));

  it('should unsubscribe from a tool that errors, whose failure is a result the model sees', marbles((m) => {
    const tool = m.cold('--#', {}, new Error('disk full'));
    const source = m.hot<LoopState>('-s----|', { s: loopState([toolCallBlock('call_1', 'slow')]) });
    const { ports } = createTestLoopPorts({ tools: [toolOf('slow', tool)] });
    m.expect(source.pipe(executeTools(ports), resultsOf)).toBeObservable('---e--|', { e: 'error' });
    m.expect(source).toHaveSubscriptions('^-----!');
    m.expect(tool).toHaveSubscriptions('-^-!');
  }));

  it('should unsubscribe from a tool that times out', marbles((m) => {
    const tool = m.cold('-------(r|)', { r: 'late' });
    const source = m.hot<LoopState>('-s-------|', { s: loopState([toolCallBlock('call_1', 'slow')]) });
    const { ports } = createTestLoopPorts({ tools: [toolOf('slow', tool)], executor: { timeoutMs: 3 } });
    m.expect(source.pipe(executeTools(ports), resultsOf)).toBeObservable('----e----|', { e: 'error' });
    m.expect(tool).toHaveSubscriptions('-^--!');
  }));

  it('should unsubscribe from the other running calls when one fails under the abort policy', marbles((m) => {
    const slow = m.cold('------(r|)', { r: 'late' });
    const boom = m.cold('--#', {}, new Error('disk on fire'));
    const source = m.hot<LoopState>('-s-------|', { s: loopState([toolCallBlock('call_s', 'slow'), toolCallBlock('call_b', 'boom')]) });
    const { ports } = createTestLoopPorts({
      tools: [toolOf('slow', slow), defineTool({ name: 'boom', description: 'fails', parameters: { type: 'object' }, policy: 'abort', execute: () => boom })],
    });
    const outcome = map((state: LoopState) => state.outcome?.status ?? 'open');
    m.expect(source.pipe(executeTools(ports), outcome)).toBeObservable('---f-----|', { f: 'failed' });
    m.expect(slow).toHaveSubscriptions('-^-!');
    m.expect(boom).toHaveSubscriptions('-^-!');
  }));

  it('should unsubscribe from a running tool when its source errors', marbles((m) => {
    const tool = m.cold('-----(r|)', { r: 'done' });
    const source = m.hot<LoopState>('-s-#', { s: loopState([toolCallBlock('call_1', 'slow')]) });
    const { ports } = createTestLoopPorts({ tools: [toolOf('slow', tool)] });
    m.expect(source.pipe(executeTools(ports), resultsOf)).toBeObservable('---#');
    m.expect(source).toHaveSubscriptions('^--!');
    m.expect(tool).toHaveSubscriptions('-^-!');
  }));

  it('should unsubscribe from its source and every running tool when unsubscribed (cancelled)', marbles((m) => {
    const a = m.cold('------(r|)', { r: 'a' });
    const b = m.cold('--------(r|)', { r: 'b' });
    const source = m.hot<LoopState>('-s-------|', { s: loopState([toolCallBlock('call_a', 'a'), toolCallBlock('call_b', 'b')]) });
    const { ports } = createTestLoopPorts({ tools: [toolOf('a', a), toolOf('b', b)] });
    m.expect(source.pipe(executeTools(ports), resultsOf), '^---!').toBeObservable('-----');
    m.expect(source).toHaveSubscriptions('^---!');
    m.expect(a).toHaveSubscriptions('-^--!');
    m.expect(b).toHaveSubscriptions('-^--!');
  }));
});
