import { createAnthropicEngine } from '../../src/engines/anthropic.js';
import type { Engine } from '../../src/core/engine.js';
import {
  afterTools, callsOf, clockTool, collect, finishedOf, firstStep, inference, reasoningOf, textOf, untilFirstText, weatherTool,
} from '../helpers/engine-harness.js';
import { httpError, loadChunks, startReplayServer, stream, typedFrames, type ReplayServer } from '../helpers/provider-replay-server.js';

const frames = (name: string) => typedFrames(loadChunks(name));
const rateLimited = { type: 'error', error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' } };
const apiError = { type: 'error', error: { type: 'api_error', message: 'Internal server error' } };
const fastRetry = { 'retry-after-ms': '1' };

describe('Anthropic Messages engine', () => {
  let server: ReplayServer;
  let engine: Engine;

  beforeEach(async () => {
    server = await startReplayServer();
    engine = createAnthropicEngine({
      apiKey: 'sk-ant-test',
      baseURL: server.url(),
      model: 'claude-sonnet-4-6',
      maxTokens: 1024,
      maxRetries: 2,
      clientOptions: { logLevel: 'off' },
    });
  });
  afterEach(() => server.close());

  it('should stream text deltas and finish with model, usage and stop reason', async () => {
    server.enqueue(stream(frames('anthropic-text')));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toBeUndefined();
    expect(events.filter((e) => e.type === 'text-delta')).toHaveLength(6);
    expect(textOf(events)).toBe("Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?");
    expect(finishedOf(events)).toEqual({
      type: 'finished', model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: 12, output_tokens: 30 }, stop_reason: 'end_turn',
    });
    const req = server.requests[0]!;
    expect(req.url).toBe('/v1/messages');
    // SDK 1.x sends the key as a bearer token; older versions used x-api-key.
    expect(req.headers.authorization ?? `Bearer ${req.headers['x-api-key']}`).toBe('Bearer sk-ant-test');
    expect(req.headers['anthropic-version']).toBeTruthy();
    expect(req.body).toMatchObject({
      model: 'claude-sonnet-4-6',
      max_tokens: 1024,
      stream: true,
      system: 'You are terse.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather in San Francisco and Rome?' }] }],
    });
  });

  it('should assemble one tool call whose argument JSON arrives in many chunks', async () => {
    server.enqueue(stream(frames('anthropic-issue-11719-quoted-tool-input')));
    const { events } = await collect(engine.infer(inference(firstStep)));
    expect(callsOf(events)).toEqual([
      {
        type: 'tool-call',
        id: 'toolu_01Cr31vcGoeeRgi3Eo5Ds8qN',
        name: 'website_update',
        args: {
          website_path: '/home/user/pace-landing',
          tasks: [
            {
              description:
                'Today you post every run to Strava, but Strava does not answer the question: "What should I do next after this run?". It is a great log, but it is not adaptive.',
              type: 'feature',
              passes: false,
            },
          ],
        },
      },
    ]);
    expect(finishedOf(events)).toMatchObject({ stop_reason: 'tool_use', usage: { input_tokens: 912, output_tokens: 118 } });
  });

  it('should stream text before a tool call in the same message', async () => {
    server.enqueue(stream(frames('anthropic-issue-10781.1')));
    const { events } = await collect(engine.infer(inference(firstStep)));
    expect(events.map((e) => e.type)).toEqual(['text-delta', 'text-delta', 'tool-call', 'finished']);
    expect(callsOf(events)).toEqual([
      { type: 'tool-call', id: 'toolu_01Ni1uw4HXYxUhc4iFMqx7yY', name: 'get_weather', args: { city: 'San Francisco' } },
    ]);
  });

  it('should deliver two parallel tool calls in block order', async () => {
    server.enqueue(stream(frames('anthropic-parallel-tools.synthetic')));
    const { events } = await collect(engine.infer(inference(firstStep)));
    expect(callsOf(events)).toEqual([
      { type: 'tool-call', id: 'toolu_01SynthWeatherSF00000001', name: 'get_weather', args: { city: 'San Francisco' } },
      { type: 'tool-call', id: 'toolu_01SynthWeatherRome000002', name: 'get_weather', args: { city: 'Rome' } },
    ]);
    expect(finishedOf(events)).toMatchObject({ usage: { input_tokens: 701, output_tokens: 77 } });
  });

  it('should turn thinking deltas into reasoning events', async () => {
    server.enqueue(stream(frames('anthropic-clear-thinking.1')));
    const { events } = await collect(engine.infer(inference(firstStep)));
    expect(reasoningOf(events)).toBe('The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185');
    expect(textOf(events)).toBe('925 ÷ 5 = 185');
  });

  it('should send the advertised tools and the previous step, the failed result flagged is_error', async () => {
    server.enqueue(stream(frames('anthropic-text')));
    await collect(engine.infer(inference(afterTools, { tools: [weatherTool, clockTool], toolChoice: 'required', parallelToolCalls: false })));
    const body = server.requests[0]!.body;
    expect(body.tools).toEqual([
      {
        name: 'get_weather',
        description: 'Current weather for a city',
        input_schema: {
          type: 'object',
          properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
          required: ['city'],
          additionalProperties: false,
        },
      },
      { name: 'clock', description: 'The current time', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(body.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in San Francisco and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking both.' },
          { type: 'tool_use', id: 'call_sf', name: 'get_weather', input: { city: 'San Francisco' } },
          { type: 'tool_use', id: 'call_rome', name: 'get_weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_sf', content: '{"temp_c":14,"sky":"fog"}' },
          { type: 'tool_result', tool_use_id: 'call_rome', content: 'weather service timed out', is_error: true },
        ],
      },
    ]);
  });

  it('should map tool choice none and auto', async () => {
    server.enqueue(stream(frames('anthropic-text')), stream(frames('anthropic-text')));
    await collect(engine.infer(inference(firstStep, { toolChoice: 'none' })));
    await collect(engine.infer(inference(firstStep, { toolChoice: 'auto' })));
    expect(server.requests[0]!.body.tool_choice).toEqual({ type: 'none' });
    expect(server.requests[1]!.body.tool_choice).toEqual({ type: 'auto' });
  });

  it('should retry a 429 and then succeed', async () => {
    server.enqueue(httpError(429, rateLimited, fastRetry), stream(frames('anthropic-text')));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toBeUndefined();
    expect(textOf(events)).toContain('Hello!');
    expect(server.requests).toHaveLength(2);
  });

  it('should fail with an EngineError when a 500 persists after the retries', async () => {
    server.enqueue(...[0, 1, 2].map(() => httpError(500, apiError, fastRetry)));
    const { error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ name: 'EngineError', code: 'http_500', status: 500 });
    expect(error?.message).toContain('Anthropic Messages: HTTP 500 after 2 retries');
    expect(error?.message).toContain('Internal server error');
    expect(server.requests).toHaveLength(3);
  });

  it('should fail with the error type when the stream carries an error event', async () => {
    const all = frames('anthropic-text');
    const overloaded = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
    server.enqueue(stream([...all.slice(0, 5), { event: 'error', data: JSON.stringify(overloaded) }]));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(textOf(events)).toBe('Hello! I');
    expect(error).toMatchObject({ name: 'EngineError', code: 'overloaded_error' });
    expect(error?.message).toContain('Overloaded');
  });

  it('should fail with stream_cut when the connection drops mid-stream', async () => {
    server.enqueue(stream(frames('anthropic-issue-11719-quoted-tool-input'), { cutAfter: 8 }));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ name: 'EngineError', code: 'stream_cut' });
    expect(callsOf(events)).toEqual([]);
  });

  it('should fail with stream_cut when the stream ends cleanly before message_stop', async () => {
    server.enqueue(stream(frames('anthropic-text').slice(0, -1)));
    const { error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ code: 'stream_cut' });
    expect(error?.message).toContain('message_stop');
  });

  it('should fail with malformed_chunk on an event that is not JSON', async () => {
    const all = frames('anthropic-text');
    server.enqueue(stream([all[0]!, { event: 'content_block_start', data: '{"type":"content_block_start","index":0,' }, ...all.slice(2)]));
    const { error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ code: 'malformed_chunk' });
  });

  it('should abort the HTTP request when unsubscribed mid-stream', async () => {
    server.enqueue(stream(frames('anthropic-text'), { holdAfter: 5 }));
    const { subscription, seen } = await untilFirstText(engine.infer(inference(firstStep)));
    expect(seen.some((e) => e.type === 'finished')).toBe(false);
    subscription.unsubscribe();
    await server.requests[0]!.clientClosed;
  });
});
