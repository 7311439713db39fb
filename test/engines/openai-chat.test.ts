import { createOpenAIChatEngine } from '../../src/engines/openai-chat.js';
import type { Engine } from '../../src/core/engine.js';
import {
  afterTools, callsOf, clockTool, collect, finishedOf, firstStep, inference, reasoningOf, textOf, untilFirstText, weatherTool,
} from '../helpers/engine-harness.js';
import {
  chatFrames, httpError, loadChunks, startReplayServer, stream, type ReplayServer,
} from '../helpers/provider-replay-server.js';

const rateLimited = { error: { message: 'Rate limit reached for gpt-4.1-mini', type: 'requests', code: 'rate_limit_exceeded' } };
const serverError = { error: { message: 'The server had an error while processing your request.', type: 'server_error' } };
// retry-after-ms is honoured by the SDK, so retries in these tests wait 1 ms instead of backing off.
const fastRetry = { 'retry-after-ms': '1' };

describe('OpenAI Chat Completions engine', () => {
  let server: ReplayServer;
  let engine: Engine;

  beforeEach(async () => {
    server = await startReplayServer();
    engine = createOpenAIChatEngine({
      apiKey: 'sk-test',
      baseURL: server.url('/v1'),
      model: 'gpt-4.1-mini',
      maxRetries: 2,
      clientOptions: { logLevel: 'off' },
    });
  });
  afterEach(() => server.close());

  it('should stream text deltas and finish with model, usage and stop reason', async () => {
    server.enqueue(stream(chatFrames(loadChunks('openai-chat-text.excerpt'))));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toBeUndefined();
    expect(events.filter((e) => e.type === 'text-delta').length).toBe(6);
    expect(textOf(events)).toBe('**Holiday Name:** Harmony Day');
    expect(finishedOf(events)).toEqual({
      type: 'finished', model: 'gpt-4.1-nano-2025-04-14', usage: { input_tokens: 16, output_tokens: 300 }, stop_reason: 'stop',
    });
    expect(events.at(-1)?.type).toBe('finished');
    const req = server.requests[0]!;
    expect(req.url).toBe('/v1/chat/completions');
    expect(req.headers.authorization).toBe('Bearer sk-test');
    expect(req.body).toMatchObject({ model: 'gpt-4.1-mini', stream: true, stream_options: { include_usage: true } });
    expect(req.body.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Weather in San Francisco and Rome?' },
    ]);
  });

  it('should turn reasoning_content deltas (DeepSeek, vLLM) into reasoning events before the answer', async () => {
    server.enqueue(stream(chatFrames(loadChunks('openai-chat-deepseek-reasoning.excerpt'))));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toBeUndefined();
    expect(reasoningOf(events)).toBe('We need answer simple. Need count r in strawberry.');
    expect(textOf(events)).toBe('There are **3** “r”s in **“strawberry”**.');
    const types = events.map((e) => e.type);
    expect(types.lastIndexOf('reasoning-delta')).toBeLessThan(types.indexOf('text-delta'));
    expect(finishedOf(events)).toMatchObject({ model: 'deepseek-v4-flash', usage: { input_tokens: 97, output_tokens: 106 }, stop_reason: 'stop' });
  });

  it('should read the reasoning field (Ollama, newer vLLM) the same way, once when both fields carry it', async () => {
    // The same recording with the field renamed as Ollama streams it, then with both fields set.
    const renamed = loadChunks('openai-chat-deepseek-reasoning.excerpt').map((chunk) => {
      const { reasoning_content, ...delta } = chunk.choices[0].delta;
      return { ...chunk, choices: [{ ...chunk.choices[0], delta: { ...delta, reasoning: reasoning_content } }] };
    });
    const both = renamed.map((chunk) => ({ ...chunk, choices: [{ ...chunk.choices[0], delta: { ...chunk.choices[0].delta, reasoning_content: chunk.choices[0].delta.reasoning } }] }));
    server.enqueue(stream(chatFrames(renamed)), stream(chatFrames(both)));
    for (let i = 0; i < 2; i++) {
      const { events } = await collect(engine.infer(inference(firstStep)));
      expect(reasoningOf(events)).toBe('We need answer simple. Need count r in strawberry.');
    }
  });

  it('should assemble one tool call whose argument JSON arrives in many chunks', async () => {
    server.enqueue(stream(chatFrames(loadChunks('openai-chat-tool-call.synthetic'))));
    const { events } = await collect(engine.infer(inference(firstStep)));
    expect(callsOf(events)).toEqual([
      { type: 'tool-call', id: 'call_synthWeather01', name: 'get_weather', args: { city: 'San Francisco', unit: 'c' } },
    ]);
    expect(finishedOf(events)).toMatchObject({ stop_reason: 'tool_calls', usage: { input_tokens: 81, output_tokens: 19 } });
  });

  it('should deliver two parallel tool calls in index order', async () => {
    server.enqueue(stream(chatFrames(loadChunks('openai-chat-parallel-tools.synthetic'))));
    const { events } = await collect(engine.infer(inference(firstStep, { parallelToolCalls: true })));
    expect(callsOf(events)).toEqual([
      { type: 'tool-call', id: 'call_synthSF', name: 'get_weather', args: { city: 'San Francisco' } },
      { type: 'tool-call', id: 'call_synthRome', name: 'get_weather', args: { city: 'Rome' } },
    ]);
    expect(server.requests[0]!.body.parallel_tool_calls).toBe(true);
  });

  it('should send the advertised tools, the grouped previous step and its results, errors flagged', async () => {
    server.enqueue(stream(chatFrames(loadChunks('openai-chat-text.excerpt'))));
    await collect(engine.infer(inference(afterTools, { tools: [weatherTool, clockTool], toolChoice: 'required', parallelToolCalls: false })));
    const body = server.requests[0]!.body;
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Current weather for a city',
          parameters: {
            type: 'object',
            properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
            required: ['city'],
            additionalProperties: false,
          },
        },
      },
      { type: 'function', function: { name: 'clock', description: 'The current time', parameters: { type: 'object', properties: {} } } },
    ]);
    expect(body.tool_choice).toBe('required');
    expect(body.parallel_tool_calls).toBe(false);
    expect(body.messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: 'Checking both.',
        tool_calls: [
          { id: 'call_sf', type: 'function', function: { name: 'get_weather', arguments: '{"city":"San Francisco"}' } },
          { id: 'call_rome', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_sf', content: '{"temp_c":14,"sky":"fog"}' },
      { role: 'tool', tool_call_id: 'call_rome', content: '{"error":"weather service timed out","result":null}' },
    ]);
  });

  it('should advertise no tools, tool_choice or parallel_tool_calls when the request allows none', async () => {
    server.enqueue(stream(chatFrames(loadChunks('openai-chat-text.excerpt'))));
    await collect(engine.infer(inference(firstStep, { tools: [], toolChoice: 'auto', parallelToolCalls: true })));
    const body = server.requests[0]!.body;
    expect(body).not.toHaveProperty('tools');
    expect(body).not.toHaveProperty('tool_choice');
    expect(body).not.toHaveProperty('parallel_tool_calls');
  });

  it('should retry a 429 and then succeed', async () => {
    server.enqueue(httpError(429, rateLimited, fastRetry), stream(chatFrames(loadChunks('openai-chat-text.excerpt'))));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toBeUndefined();
    expect(textOf(events)).toBe('**Holiday Name:** Harmony Day');
    expect(server.requests).toHaveLength(2);
  });

  it('should fail with an EngineError when a 500 persists after the retries', async () => {
    server.enqueue(...[0, 1, 2].map(() => httpError(500, serverError, fastRetry)));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(events).toEqual([]);
    expect(error).toMatchObject({ name: 'EngineError', code: 'http_500', status: 500 });
    expect(error?.message).toContain('OpenAI Chat Completions: HTTP 500 after 2 retries');
    expect(error?.message).toContain('The server had an error');
    expect(server.requests).toHaveLength(3);
  });

  it('should fail with stream_cut when the connection drops mid-stream', async () => {
    server.enqueue(stream(chatFrames(loadChunks('openai-chat-text.excerpt')), { cutAfter: 4 }));
    const { events, error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ name: 'EngineError', code: 'stream_cut' });
    expect(events.some((e) => e.type === 'finished')).toBe(false);
  });

  it('should fail with stream_cut when the stream ends cleanly before a finish_reason', async () => {
    server.enqueue(stream(loadChunks('openai-chat-text.excerpt').slice(0, 4).map((c) => ({ data: JSON.stringify(c) }))));
    const { error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ code: 'stream_cut' });
    expect(error?.message).toContain('finish_reason');
  });

  it('should fail with malformed_chunk on a chunk that is not JSON', async () => {
    const frames = chatFrames(loadChunks('openai-chat-text.excerpt'));
    server.enqueue(stream([frames[0]!, { data: '{"id":"chatcmpl-x","choices":[{' }, ...frames.slice(1)]));
    const { error } = await collect(engine.infer(inference(firstStep)));
    expect(error).toMatchObject({ name: 'EngineError', code: 'malformed_chunk' });
  });

  it('should abort the HTTP request when unsubscribed mid-stream', async () => {
    server.enqueue(stream(chatFrames(loadChunks('openai-chat-text.excerpt')), { holdAfter: 3 }));
    const { subscription, seen } = await untilFirstText(engine.infer(inference(firstStep)));
    expect(seen.some((e) => e.type === 'finished')).toBe(false);
    subscription.unsubscribe();
    await server.requests[0]!.clientClosed;
  });
});
