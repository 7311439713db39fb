import { z } from 'zod';
import { createStepwise, defineTool, type Engine, type SequencedEvent } from '../../src/index.js';
import { createAnthropicEngine } from '../../src/engines/anthropic.js';
import { createOpenAIChatEngine } from '../../src/engines/openai-chat.js';
import { createOpenAIResponsesEngine } from '../../src/engines/openai-responses.js';
import {
  chatFrames, httpError, loadChunks, startReplayServer, stream, typedFrames, type ReplayResponse, type ReplayServer,
} from '../helpers/provider-replay-server.js';

/**
 * One whole loop per provider, through the real SDK over HTTP: the model asks for a real tool,
 * step mode pauses before and after it, a subscriber continues each pause, the tool runs, its
 * result goes back to the provider, and the model's final text completes the run.
 */

interface ProviderCase {
  readonly name: string;
  readonly engine: (server: ReplayServer) => Engine;
  readonly replies: readonly [ReplayResponse, ReplayResponse];
  readonly city: string;
  readonly callId: string;
  /** The tool result as the provider received it in the second request. */
  readonly sentResult: (body: any) => unknown;
  readonly finalText: string;
}

const quiet = { logLevel: 'off' as const };

const cases: readonly ProviderCase[] = [
  {
    name: 'OpenAI Chat Completions',
    engine: (s) => createOpenAIChatEngine({ apiKey: 'sk-test', baseURL: s.url('/v1'), clientOptions: quiet }),
    replies: [
      stream(chatFrames(loadChunks('openai-chat-tool-call.synthetic'))),
      stream(chatFrames(loadChunks('openai-chat-text.excerpt'))),
    ],
    city: 'San Francisco',
    callId: 'call_synthWeather01',
    sentResult: (body) => body.messages.find((m: any) => m.role === 'tool'),
    finalText: '**Holiday Name:** Harmony Day',
  },
  {
    name: 'OpenAI Responses',
    engine: (s) => createOpenAIResponsesEngine({ apiKey: 'sk-test', baseURL: s.url('/v1'), clientOptions: quiet }),
    replies: [
      stream(typedFrames(loadChunks('openai-responses-issue-19493-gpt-5.1-tool-call'))),
      stream(typedFrames(loadChunks('openai-responses-phase.1'))),
    ],
    city: 'Beijing',
    callId: 'call_2FQdm3Br7Qb35YUBSkDR7kue',
    sentResult: (body) => body.input.find((i: any) => i.type === 'function_call_output'),
    finalText: "I'm going to search for thatThe capital of France is Paris.",
  },
  {
    name: 'Anthropic Messages',
    engine: (s) => createAnthropicEngine({ apiKey: 'sk-ant-test', baseURL: s.url(), clientOptions: quiet }),
    replies: [stream(typedFrames(loadChunks('anthropic-issue-10781.1'))), stream(typedFrames(loadChunks('anthropic-text')))],
    city: 'San Francisco',
    callId: 'toolu_01Ni1uw4HXYxUhc4iFMqx7yY',
    sentResult: (body) => body.messages.at(-1).content.find((c: any) => c.type === 'tool_result'),
    finalText: "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
  },
];

describe.each(cases)('$name end to end', (provider) => {
  let server: ReplayServer;
  beforeEach(async () => {
    server = await startReplayServer();
  });
  afterEach(() => server.close());

  it('should run a whole step-mode loop with a real tool, continued by a subscriber', async () => {
    const ran: unknown[] = [];
    const weather = defineTool({
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: z.object({ city: z.string(), unit: z.enum(['c', 'f']).optional() }),
      execute: (args: { city: string }) => {
        ran.push(args);
        return { city: args.city, temp_c: 21 };
      },
    });
    server.enqueue(...provider.replies);
    const sw = createStepwise({ engine: provider.engine(server), tools: [weather], systemPrompt: 'Use tools.' });
    const session = sw.sessions.open();
    sw.controller.enable(session.session_id);
    const events: SequencedEvent[] = [];
    const subscription = sw.hub.events$.subscribe((frame) => {
      events.push(frame);
      if (frame.event.type === 'paused') sw.controller.submit({ pause_id: frame.event.pause.pause_id, action: 'continue' });
    });

    try {
      const result = await session.start({ prompt: 'What is the weather?' }).result();

      expect(result.status).toBe('completed');
      expect(ran).toEqual([expect.objectContaining({ city: provider.city })]);
      const types = events.map((f) => f.event.type);
      expect(types.filter((t) => t === 'paused')).toHaveLength(2);
      expect(events.flatMap((f) => (f.event.type === 'resumed' ? [f.event.reason] : []))).toEqual(['continued', 'continued']);
      expect(types.indexOf('paused')).toBeLessThan(types.indexOf('tool-execution-started'));

      const finals = events.flatMap((f) => (f.event.type === 'inference-finished' ? [f.event] : []));
      expect(finals).toHaveLength(2);
      expect(finals[0]!.usage.input_tokens).toBeGreaterThan(0);
      expect(finals[1]!.text).toBe(provider.finalText);

      const blocks = result.turn.blocks;
      expect(blocks.find((b) => b.kind === 'tool_call')?.payload).toMatchObject({ id: provider.callId, name: 'get_weather' });
      expect(blocks.find((b) => b.kind === 'tool_use')?.payload).toMatchObject({ id: provider.callId, result: { city: provider.city, temp_c: 21 } });

      expect(server.requests).toHaveLength(2);
      const second = server.requests[1]!.body;
      expect(JSON.stringify(provider.sentResult(second))).toContain(provider.callId);
      expect(JSON.stringify(provider.sentResult(second))).toContain('"temp_c\\":21');
      expect(JSON.stringify(second)).toContain('get_weather');
    } finally {
      subscription.unsubscribe();
      sw.dispose();
    }
  });

  it('should fail the run with the provider error as an event, and keep the session usable', async () => {
    const down = httpError(503, { error: { type: 'overloaded_error', message: 'Service unavailable' } }, { 'retry-after-ms': '1' });
    server.enqueue(down, down, down, provider.replies[1]);
    const sw = createStepwise({ engine: provider.engine(server), tools: [] });
    const session = sw.sessions.open();
    const events: SequencedEvent[] = [];
    const subscription = sw.hub.events$.subscribe((frame) => events.push(frame));
    try {
      const failed = await session.start({ prompt: 'hi' }).result();
      expect(failed.status).toBe('failed');
      expect(failed.error).toContain('HTTP 503 after 2 retries');
      const failure = events.find((f) => f.event.type === 'inference-failed')?.event;
      expect(failure).toMatchObject({ type: 'inference-failed', code: 'http_503' });

      const retried = await session.start({ prompt: 'hi again' }).result();
      expect(retried.status).toBe('completed');
      expect(server.requests).toHaveLength(4);
    } finally {
      subscription.unsubscribe();
      sw.dispose();
    }
  });
});
