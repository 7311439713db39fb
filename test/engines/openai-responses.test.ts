import { createOpenAIResponsesEngine } from '../../src/engines/openai-responses.js';
import type { Engine } from '../../src/core/engine.js';
import {
  afterTools, callsOf, collect, finishedOf, firstStep, inference, reasoningOf, textOf, untilFirstText,
} from '../helpers/engine-harness.js';
import { httpError, loadChunks, startReplayServer, stream, typedFrames, type ReplayServer } from '../helpers/provider-replay-server.js';

const frames = (name: string) => typedFrames(loadChunks(name));
const rateLimited = { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } };
const serverError = { error: { message: 'The server had an error while processing your request.', type: 'server_error' } };
const fastRetry = { 'retry-after-ms': '1' };

describe('OpenAI Responses engine', () => {
  let server: ReplayServer;
  let engine: Engine;

  beforeEach(async () => {
    server = await startReplayServer();
    engine = createOpenAIResponsesEngine({
      apiKey: 'sk-test',
      baseURL: server.url('/v1'),
      model: 'gpt-4.1-mini',
      maxRetries: 2,
      clientOptions: { logLevel: 'off' },
    });
  });
  afterEach(() => server.close());

  it('should stream text deltas and finish with model, usage and stop reason', async () => {
    server.enqueue(stream(frames('openai-responses-phase.1')));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toBeUndefined();
    expect(events.filter((e) => e.type === 'text-delta').map((e) => (e.type === 'text-delta' ? e.delta : ''))).toEqual([
      "I'm going to", ' search for that', 'The capital', ' of France is Paris.',
    ]);
    expect(finishedOf(events)).toEqual({
      type: 'finished', model: 'gpt-5.3-codex', usage: { input_tokens: 50, output_tokens: 100 }, stop_reason: 'stop',
    });
    const req = server.requests[0]!;
    expect(req.url).toBe('/v1/responses');
    expect(req.body).toMatchObject({
      model: 'gpt-4.1-mini',
      stream: true,
      store: false,
      instructions: 'You are terse.',
      input: [{ role: 'user', content: 'Weather in San Francisco and Rome?' }],
    });
  });

  it('should assemble one tool call whose argument JSON arrives in many chunks', async () => {
    server.enqueue(stream(frames('openai-responses-issue-19493-gpt-5.1-tool-call')));
    const { events } = await collect(engine.infer(inference(firstStep)));
    expect(callsOf(events)).toEqual([
      { type: 'tool-call', id: 'call_2FQdm3Br7Qb35YUBSkDR7kue', name: 'get_weather', args: { city: 'Beijing' } },
    ]);
    expect(finishedOf(events)).toEqual({
      type: 'finished', model: 'gpt-5.1-2025-11-13', usage: { input_tokens: 45, output_tokens: 25 }, stop_reason: 'tool_calls',
    });
  });

  it('should assemble from the deltas alone when the done item carries no arguments', async () => {
    const chunks = loadChunks('openai-responses-issue-19493-gpt-5.1-tool-call').map((c) =>
      c.type === 'response.output_item.done' ? { ...c, item: { ...c.item, arguments: '' } } : c,
    );
    server.enqueue(stream(typedFrames(chunks)));
    const { events } = await collect(engine.infer(inference(firstStep)));
    expect(callsOf(events)).toMatchObject([{ args: { city: 'Beijing' } }]);
  });

  it('should start each further reasoning summary part on a blank line', async () => {
    // The recording's one summary part, streamed again as a second part (summary_index 1), as detailed summaries do.
    const chunks = loadChunks('openai-responses-reasoning-summary.excerpt');
    const reasoningChunks = chunks.filter((c) => c.type.startsWith('response.reasoning_summary_'));
    const secondPart = reasoningChunks.map((c) => ({ ...c, summary_index: 1 }));
    const at = chunks.findIndex((c) => c.type === 'response.reasoning_summary_text.done') + 1;
    server.enqueue(stream(typedFrames([...chunks.slice(0, at), ...secondPart, ...chunks.slice(at)])));
    const { events } = await collect(engine.infer(inference(firstStep)));
    expect(reasoningOf(events)).toBe('**Calculating step-by-step\n\n**Calculating step-by-step');
  });

  it('should turn reasoning summary deltas into reasoning events', async () => {
    server.enqueue(stream(frames('openai-responses-reasoning-summary.excerpt')));
    const { events } = await collect(engine.infer(inference(firstStep)));
    expect(reasoningOf(events)).toBe('**Calculating step-by-step');
    expect(callsOf(events)).toEqual([
      { type: 'tool-call', id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', name: 'calculator', args: { a: 12, b: 7, op: 'add' } },
    ]);
  });

  it('should deliver two parallel tool calls whose deltas interleave', async () => {
    server.enqueue(stream(frames('openai-responses-parallel-tools.synthetic')));
    const { events } = await collect(engine.infer(inference(firstStep, { parallelToolCalls: true, toolChoice: 'auto' })));
    expect(callsOf(events)).toEqual([
      { type: 'tool-call', id: 'call_synth_sf', name: 'get_weather', args: { city: 'San Francisco' } },
      { type: 'tool-call', id: 'call_synth_rome', name: 'get_weather', args: { city: 'Rome' } },
    ]);
    expect(server.requests[0]!.body).toMatchObject({ parallel_tool_calls: true, tool_choice: 'auto' });
  });

  it('should send the advertised tools and the previous step as function_call items and outputs, errors flagged', async () => {
    server.enqueue(stream(frames('openai-responses-phase.1')));
    await collect(engine.infer(inference(afterTools, { toolChoice: 'none' })));
    const body = server.requests[0]!.body;
    expect(body.tools).toEqual([
      {
        type: 'function',
        name: 'get_weather',
        description: 'Current weather for a city',
        strict: false,
        parameters: {
          type: 'object',
          properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
          required: ['city'],
          additionalProperties: false,
        },
      },
    ]);
    expect(body.tool_choice).toBe('none');
    expect(body.input).toEqual([
      { role: 'user', content: 'Weather in San Francisco and Rome?' },
      { role: 'assistant', content: 'Checking both.' },
      { type: 'function_call', call_id: 'call_sf', name: 'get_weather', arguments: '{"city":"San Francisco"}' },
      { type: 'function_call', call_id: 'call_rome', name: 'get_weather', arguments: '{"city":"Rome"}' },
      { type: 'function_call_output', call_id: 'call_sf', output: '{"temp_c":14,"sky":"fog"}' },
      { type: 'function_call_output', call_id: 'call_rome', output: '{"error":"weather service timed out","result":null}' },
    ]);
  });

  it('should retry a 429 and then succeed', async () => {
    server.enqueue(httpError(429, rateLimited, fastRetry), stream(frames('openai-responses-phase.1')));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toBeUndefined();
    expect(textOf(events)).toContain('Paris');
    expect(server.requests).toHaveLength(2);
  });

  it('should fail with an EngineError when a 500 persists after the retries', async () => {
    server.enqueue(...[0, 1, 2].map(() => httpError(500, serverError, fastRetry)));
    const { error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ name: 'EngineError', code: 'http_500', status: 500 });
    expect(error?.message).toContain('OpenAI Responses: HTTP 500 after 2 retries');
    expect(server.requests).toHaveLength(3);
  });

  it('should fail with the provider message when the stream carries an error event', async () => {
    server.enqueue(stream(frames('openai-responses-error.1')));
    const { error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ name: 'EngineError', code: 'insufficient_quota' });
    expect(error?.message).toContain('OpenAI Responses: ');
    expect(error?.message).toContain('You exceeded your current quota');
  });

  it('should fail when the response fails without a separate error event', async () => {
    server.enqueue(stream(frames('openai-responses-error.1').filter((f) => f.event !== 'error')));
    const { error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ name: 'EngineError', code: 'insufficient_quota' });
    expect(error?.message).toContain('response failed: You exceeded your current quota');
  });

  it('should fail with stream_cut when the connection drops mid-stream', async () => {
    server.enqueue(stream(frames('openai-responses-issue-19493-gpt-5.1-tool-call'), { cutAfter: 6 }));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ name: 'EngineError', code: 'stream_cut' });
    expect(callsOf(events)).toEqual([]);
  });

  it('should fail with stream_cut when the stream ends cleanly before response.completed', async () => {
    server.enqueue(stream(frames('openai-responses-phase.1').slice(0, -1)));
    const { error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ code: 'stream_cut' });
  });

  it('should fail with malformed_chunk on an event that is not JSON', async () => {
    const all = frames('openai-responses-phase.1');
    server.enqueue(stream([all[0]!, { event: 'response.output_text.delta', data: '{"type":"response.output_text.delta",' }, ...all.slice(1)]));
    const { error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ code: 'malformed_chunk' });
  });

  it('should abort the HTTP request when unsubscribed mid-stream', async () => {
    server.enqueue(stream(frames('openai-responses-phase.1'), { holdAfter: 6 }));
    const { subscription, seen } = await untilFirstText(engine.infer(inference(firstStep)));
    expect(seen.some((e) => e.type === 'finished')).toBe(false);
    subscription.unsubscribe();
    await server.requests[0]!.clientClosed;
  });
});
