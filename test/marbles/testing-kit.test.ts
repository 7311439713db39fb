import { marbles } from 'rxjs-marbles/jest';
import { asyncScheduler, filter, map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { z } from 'zod';
import { createScriptedEngine, createStepwise, defineTool, type RunResult, type StepwiseEvent, type ToolUseBlock } from '../../src/index.js';
import { asVirtualTool, createVirtualTool, isVirtualTime, labelOf, VirtualTimePromiseError } from '../../src/testing/index.js';
import { createTestRuntime } from './helpers.js';

const weather = defineTool({
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: z.object({ city: z.string(), unit: z.enum(['c', 'f']).optional() }),
  // The real thing would call a weather service; the specs below never let it run.
  execute: async ({ city }) => ({ city, temp_c: 30 }),
});

const callWeather = (args: unknown, id = 'w1') => ({ tool_calls: [{ id, name: 'get_weather', arguments: args }] });
const isToolOrLog = (label: string): boolean => /^(tool-(execution-started|result)|log|run-ended)/.test(label);
const toolUses = (result: RunResult | undefined): ToolUseBlock['payload'][] =>
  (result?.turn.blocks ?? []).filter((b): b is ToolUseBlock => b.kind === 'tool_use').map((b) => b.payload);

const L = {
  s: 'tool-execution-started:w1',
  r: 'tool-result:w1',
  x: 'tool-result:w1:error',
  g: 'log:error',
  w: 'log:warn',
  e: 'run-ended:completed',
} as const;

describe('asVirtualTool', () => {
  it('should keep the tool\'s name, description, JSON Schema and policy', () => {
    const virtual = asVirtualTool(defineTool({ ...weatherDefinition(), policy: 'retry', timeoutMs: 5 }));
    expect({ ...virtual, validate: undefined, execute: undefined, calls: undefined }).toEqual({
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: weather.parameters,
      policy: 'retry',
      timeoutMs: 5,
      validate: undefined,
      execute: undefined,
      calls: undefined,
    });
  });

  it('should answer with the scripted result after delayMs of virtual time', marbles((m) => {
    const tool = asVirtualTool<{ city: string }>(weather, { delayMs: 50, result: (args) => ({ city: args.city, temp_c: 21 }) });
    const rt = createTestRuntime({ responses: [callWeather({ city: 'Rome' }), { text: 'warm' }], tools: [tool] });
    m.expect(rt.labels$(isToolOrLog)).toBeObservable('s 49ms (re)', L);
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    expect(toolUses(result)).toEqual([{ id: 'w1', result: { city: 'Rome', temp_c: 21 } }]);
    expect(tool.calls.map(({ args, at }) => ({ args, at }))).toEqual([{ args: { city: 'Rome' }, at: 0 }]);
  }));

  it('should validate the arguments with the tool\'s own schema before the script runs', marbles((m) => {
    const tool = asVirtualTool(weather, { result: { temp_c: 21 } });
    const rt = createTestRuntime({ responses: [callWeather({ city: 5 }), { text: 'sorry' }], tools: [tool] });
    m.expect(rt.labels$(isToolOrLog)).toBeObservable('(wxe)', L);
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    expect(tool.calls).toEqual([]);
    expect(toolUses(result)[0]?.error).toBe('invalid arguments for get_weather: city: Invalid input: expected string, received number');
  }));

  it('should fail with the scripted error after the delay', marbles((m) => {
    const tool = asVirtualTool(weather, { delayMs: 20, error: 'weather service down' });
    const rt = createTestRuntime({ responses: [callWeather({ city: 'Rome' }), { text: 'sorry' }], tools: [tool] });
    m.expect(rt.labels$(isToolOrLog)).toBeObservable('s 19ms (xe)', L);
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    expect(toolUses(result)).toEqual([{ id: 'w1', result: null, error: 'weather service down' }]);
  }));

  it('should script per call: fail the first two, then succeed under the retry policy', marbles((m) => {
    const tool = asVirtualTool(weather, { error: (_args, index) => (index < 2 ? 'flaky' : undefined), result: (_args, index) => ({ attempt: index }) });
    const rt = createTestRuntime({ responses: [callWeather({ city: 'Rome' }), { text: 'ok' }], tools: [tool], toolPolicy: 'retry', toolRetryBaseDelayMs: 100 });
    m.expect(rt.labels$((l) => l.startsWith('tool-result'))).toBeObservable('300ms r', L);
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    expect(tool.calls.map((call) => call.at)).toEqual([0, 100, 300]);
    expect(toolUses(result)[0]?.result).toEqual({ attempt: 2 });
  }));

  it('should hang until the tool timeout and see its signal aborted', marbles((m) => {
    const tool = asVirtualTool(weather, { hang: true });
    const rt = createTestRuntime({ responses: [callWeather({ city: 'Rome' }), { text: 'late' }], tools: [tool], toolTimeoutMs: 1000 });
    m.expect(rt.labels$(isToolOrLog)).toBeObservable('s 999ms (xe)', L);
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 0);
    m.flush();
    expect(tool.calls[0]?.signal.aborted).toBe(true);
  }));

  it('should time delays on a scheduler it is given, outside TestScheduler.run', () => {
    const scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
    const tool = asVirtualTool(weather, { delayMs: 40, result: { temp_c: 21 }, scheduler });
    const sw = createStepwise({ engine: createScriptedEngine({ responses: [callWeather({ city: 'Rome' }), { text: 'ok' }] }), tools: [tool], scheduler });
    const ended: number[] = [];
    sw.hub.events$.subscribe(({ event }) => event.type === 'tool-result' && ended.push(event.at));
    scheduler.schedule(() => void sw.sessions.open().start({ prompt: 'go' }), 10);
    scheduler.flush();
    expect(tool.calls.map((call) => call.at)).toEqual([10]);
    expect(ended).toEqual([50]);
  });
});

describe('VirtualTimePromiseError', () => {
  it('should fail a Promise-returning tool at once, as the result the model sees and an error log', marbles((m) => {
    const rt = createTestRuntime({ responses: [callWeather({ city: 'Rome' }), { text: 'sorry' }], tools: [weather] });
    m.expect(rt.labels$(isToolOrLog)).toBeObservable('(sgxe)', L);
    const events: StepwiseEvent[] = [];
    rt.events$().subscribe((event) => events.push(event));
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    const message = new VirtualTimePromiseError('get_weather', 'Promise').message;
    expect(message).toBe(
      'tool "get_weather" returned a Promise while running under a virtual-time scheduler; Promises do not advance in virtual time: ' +
        'return an Observable (e.g. timer(ms).pipe(map(() => result))), or wrap the tool with asVirtualTool(tool, { delayMs, result }) ' +
        'from stepwise/testing in tests',
    );
    expect(toolUses(result)).toEqual([{ id: 'w1', result: null, error: message }]);
    expect(events.find((e) => e.type === 'log')).toMatchObject({ level: 'error', message, fields: { tool_call_id: 'w1', name: 'get_weather' } });
  }));

  it('should name an async iterable for what it is', marbles((m) => {
    const stream = defineTool({ ...weatherDefinition(), execute: async function* () { yield 1; } });
    const rt = createTestRuntime({ responses: [callWeather({ city: 'Rome' }), { text: 'sorry' }], tools: [stream] });
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    expect(toolUses(result)[0]?.error).toContain('tool "get_weather" returned an async iterable while running under a virtual-time scheduler');
  }));

  it('should detect a TestScheduler given to the runtime outside TestScheduler.run', () => {
    const scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
    const sw = createStepwise({ engine: createScriptedEngine({ responses: [callWeather({ city: 'Rome' }), { text: 'ok' }] }), tools: [weather], scheduler });
    const labels: string[] = [];
    sw.hub.events$.subscribe(({ event }) => labels.push(`${labelOf(event)}@${event.at}`));
    scheduler.schedule(() => void sw.sessions.open().start({ prompt: 'go' }), 5);
    scheduler.flush();
    expect(labels.filter((l) => /^(log|tool-result)/.test(l))).toEqual(['log:error@5', 'tool-result:w1:error@5']);
  });

  it('should leave Promise-returning tools alone in real time', async () => {
    const sw = createStepwise({ engine: createScriptedEngine({ responses: [callWeather({ city: 'Rome' }), { text: 'hot' }] }), tools: [weather] });
    const result = await sw.sessions.open().start({ prompt: 'go' }).result();
    expect(toolUses(result)).toEqual([{ id: 'w1', result: { city: 'Rome', temp_c: 30 } }]);
    sw.dispose();
  });
});

describe('isVirtualTime', () => {
  it('should be false in real time, for the async scheduler or none', () => {
    expect(isVirtualTime()).toBe(false);
    expect(isVirtualTime(asyncScheduler)).toBe(false);
  });

  it('should be true inside TestScheduler.run, where the async scheduler is virtual', marbles(() => {
    expect(isVirtualTime()).toBe(true);
    expect(isVirtualTime(asyncScheduler)).toBe(true);
  }));

  it('should be true for a TestScheduler, and for a virtual-time scheduler of another rxjs copy', () => {
    expect(isVirtualTime(new TestScheduler(() => undefined))).toBe(true);
    const foreign = { now: () => 0, schedule: () => ({ unsubscribe() {} }), flush() {}, frame: 0, maxFrames: Infinity };
    expect(isVirtualTime(foreign as never)).toBe(true);
  });
});

describe('createVirtualTool', () => {
  it('should echo its text after delayMs, and fail its first failTimes calls', marbles((m) => {
    const tool = createVirtualTool({ delayMs: 10, failTimes: 1, failMessage: 'first one fails' });
    const rt = createTestRuntime({
      responses: [{ tool_calls: [{ id: 'a', name: 'echo', arguments: { text: 'one' } }, { id: 'b', name: 'echo', arguments: { text: 'two' } }] }, { text: 'ok' }],
      tool,
    });
    let result: RunResult | undefined;
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe((r) => (result = r)), 0);
    m.flush();
    expect(toolUses(result)).toEqual([
      { id: 'a', result: null, error: 'first one fails' },
      { id: 'b', result: { echoed: 'two' } },
    ]);
    expect(tool.calls.map((call) => call.at)).toEqual([0, 0]);
  }));
});

describe('createScriptedEngine (reasoning)', () => {
  it('should stream the scripted reasoning first, then the text, one chunk delay apart', marbles((m) => {
    const engine = createScriptedEngine({ responses: [{ reasoning: 'think hard', text: 'done' }], chunk_delay_ms: 5 });
    const request = { conv_id: 'c1', session_id: 's', inference_id: 'i', turn_id: 't', blocks: [], tools: [] };
    const kinds = engine.infer(request).pipe(map((e) => (e.type === 'finished' ? e.type : `${e.type}:${'delta' in e ? e.delta : ''}`)));
    m.expect(kinds).toBeObservable('a 4ms b 4ms (cf|)', { a: 'reasoning-delta:think ', b: 'reasoning-delta:hard', c: 'text-delta:done', f: 'finished' });
  }));

  it('should publish reasoning-started, -delta with the growing text, and -finished before the answer', marbles((m) => {
    const rt = createTestRuntime({ responses: [{ reasoning: 'a b c', text: 'ok' }] });
    const reasoning$ = rt.events$().pipe(
      filter((e) => e.type.startsWith('reasoning') || e.type === 'text-delta'),
      map((e) => (e.type === 'reasoning-delta' ? `delta:${e.cumulative}` : e.type === 'reasoning-finished' ? `finished:${e.text}` : e.type)),
    );
    m.expect(reasoning$).toBeObservable('(sabcft)', { s: 'reasoning-started', a: 'delta:a ', b: 'delta:a b ', c: 'delta:a b c', f: 'finished:a b c', t: 'text-delta' });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }), 0);
  }));
});

function weatherDefinition() {
  return {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: z.object({ city: z.string(), unit: z.enum(['c', 'f']).optional() }),
    execute: ({ city }: { city: string }) => ({ city, temp_c: 30 }),
  };
}
