import { SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { marbles } from 'rxjs-marbles/jest';
import { filter, take } from 'rxjs';
import type { PauseInfo } from '../../src/index.js';
import { callEcho, createTestRuntime } from './helpers.js';

/** A real OpenTelemetry SDK whose finished spans stay in memory, and a tracer of it. */
function recordingProvider(): { provider: TracerProvider; tracer: Tracer; spans: () => ReadableSpan[] } {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  return { provider, tracer: provider.getTracer('test'), spans: () => exporter.getFinishedSpans() };
}
const recordingTracer = (): { tracer: Tracer; spans: () => ReadableSpan[] } => recordingProvider();

const ms = ([seconds, nanos]: readonly [number, number]): number => seconds * 1000 + nanos / 1e6;
const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;

describe('traceRuns: spans from the hub', () => {
  it('should trace a run with its inferences, tool call and pauses, timed in virtual time', marbles((m) => {
    const { tracer, spans } = recordingTracer();
    const rt = createTestRuntime({ tracer, stepMode: true, pauseTimeoutMs: 2000, responses: [callEcho('hi', 'e1'), { text: 'done' }] });
    const pauses: PauseInfo[] = [];
    rt.sw.hub.events$.pipe(filter(({ event }) => event.type === 'paused'), take(2)).subscribe(({ event }) => {
      if (event.type === 'paused') pauses.push(event.pause);
    });
    // The first pause is continued by alice a virtual second later; the second times out (2 s).
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe(), 0);
    m.scheduler.schedule(() => rt.sw.controller.submit({ pause_id: pauses[0]?.pause_id ?? '', by: 'alice' }), 1000);
    m.flush();

    const finished = spans();
    const byName = (name: string): ReadableSpan[] => finished.filter((span) => span.name === name);
    expect(finished.map((span) => span.name).sort()).toEqual(
      ['chat scripted', 'chat scripted', 'execute_tool echo', 'invoke_agent stepwise', 'stepwise.pause after_inference', 'stepwise.pause after_tools'].sort(),
    );
    const [run] = byName('invoke_agent stepwise');
    expect(run?.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.conversation.id': 'c1', 'stepwise.run.status': 'completed' });
    expect(run?.attributes['stepwise.run.resumed']).toBeUndefined();
    expect(parentOf(run as ReadableSpan)).toBeUndefined();
    for (const span of finished.filter((s) => s !== run)) expect(parentOf(span)).toBe(run?.spanContext().spanId);

    const [first, second] = byName('chat scripted');
    expect(first?.kind).toBe(SpanKind.CLIENT);
    expect(first?.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'scripted', 'gen_ai.response.model': 'scripted', 'gen_ai.provider.name': 'scripted' });
    expect(first?.attributes['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
    expect(second?.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);

    const [tool] = byName('execute_tool echo');
    expect(tool?.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'echo', 'gen_ai.tool.call.id': 'e1' });
    expect(tool?.status.code).not.toBe(SpanStatusCode.ERROR);

    const [continued] = byName('stepwise.pause after_inference');
    expect(continued?.attributes).toMatchObject({ 'stepwise.pause.id': pauses[0]?.pause_id, 'stepwise.pause.reason': 'continued', 'stepwise.pause.by': 'alice', 'stepwise.pause.tools': ['echo'], 'stepwise.pause.waited_ms': 1000 });
    expect(ms(continued?.duration ?? [0, 0])).toBe(1000);
    const [timedOut] = byName('stepwise.pause after_tools');
    expect(timedOut?.attributes).toMatchObject({ 'stepwise.pause.reason': 'timeout', 'stepwise.pause.by': 'system', 'stepwise.pause.waited_ms': 2000 });
    expect(ms(timedOut?.duration ?? [0, 0])).toBe(2000);
    expect(ms(run?.duration ?? [0, 0])).toBe(3000);
  }));

  it('should mark a failed inference and a failed run as errors', marbles((m) => {
    const { tracer, spans } = recordingTracer();
    const rt = createTestRuntime({ tracer, responses: [{ error: 'the model is overloaded' }] });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe({ error: () => {} }), 0);
    m.flush();
    const [inference] = spans().filter((span) => span.name.startsWith('chat '));
    expect(inference?.status).toEqual({ code: SpanStatusCode.ERROR, message: expect.stringContaining('overloaded') });
    const [run] = spans().filter((span) => span.name === 'invoke_agent stepwise');
    expect(run?.status.code).toBe(SpanStatusCode.ERROR);
    expect(run?.attributes['stepwise.run.status']).toBe('failed');
  }));

  it('should open no tool span for a call whose arguments were refused', marbles((m) => {
    const { tracer, spans } = recordingTracer();
    const rt = createTestRuntime({ tracer, responses: [{ tool_calls: [{ id: 'x1', name: 'echo', arguments: { text: 5 } }] }, { text: 'sorry' }] });
    m.scheduler.schedule(() => rt.session.start({ prompt: 'go' }).result$.subscribe(), 0);
    m.flush();
    // Invalid arguments never reach the tool: no execution, no tool span, and the run still completes.
    expect(spans().map((span) => span.name)).not.toContain('execute_tool echo');
    expect(spans().find((span) => span.name === 'invoke_agent stepwise')?.attributes['stepwise.run.status']).toBe('completed');
  }));

  describe('with the default tracer (OpenTelemetry\'s global one)', () => {
    afterEach(() => trace.disable());

    it('should trace the runs that start once an SDK is registered, not those before', marbles((m) => {
      // Created while no SDK is registered: the hub is not followed yet (no-op spans cost 5% of loop_step).
      const rt = createTestRuntime({ responses: [{ text: 'first' }, callEcho('hi', 'e1'), { text: 'second' }] });
      m.scheduler.schedule(() => rt.session.start({ prompt: 'before' }).result$.subscribe(), 0);
      m.flush();
      const { provider, spans } = recordingProvider();
      expect(trace.setGlobalTracerProvider(provider)).toBe(true);
      m.scheduler.schedule(() => rt.session.start({ prompt: 'after' }).result$.subscribe(), 0);
      m.flush();
      const runs = spans().filter((span) => span.name === 'invoke_agent stepwise');
      expect(runs).toHaveLength(1);
      expect(runs[0]?.attributes['stepwise.run.resumed']).toBeUndefined();
      expect(spans().map((span) => span.name).sort()).toEqual(['chat scripted', 'chat scripted', 'execute_tool echo', 'invoke_agent stepwise']);
    }));

    it('should trace nothing while no SDK is registered, and nothing with tracer: null', marbles((m) => {
      const { provider, spans } = recordingProvider();
      const untraced = createTestRuntime({ tracer: null, conv_id: 'c2', responses: [{ text: 'quiet' }] });
      trace.setGlobalTracerProvider(provider);
      m.scheduler.schedule(() => untraced.session.start({ prompt: 'go' }).result$.subscribe(), 0);
      m.flush();
      expect(spans()).toEqual([]);
      trace.disable();
      const unregistered = createTestRuntime({ conv_id: 'c3', responses: [{ text: 'quiet' }] });
      m.scheduler.schedule(() => unregistered.session.start({ prompt: 'go' }).result$.subscribe(), 0);
      m.flush();
      expect(spans()).toEqual([]);
    }));
  });
});
