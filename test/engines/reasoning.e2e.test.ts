import { z } from 'zod';
import { defineTool, type Engine } from '../../src/index.js';
import { createAnthropicEngine } from '../../src/engines/anthropic.js';
import { createOpenAIChatEngine } from '../../src/engines/openai-chat.js';
import { createOpenAIResponsesEngine } from '../../src/engines/openai-responses.js';
import { chatFrames, loadChunks, startReplayServer, stream, typedFrames, type ReplayResponse, type ReplayServer } from '../helpers/provider-replay-server.js';
import { post, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient, type Frame } from '../helpers/server-ws-client.js';

/**
 * Reasoning from each provider, recorded, replayed through its official SDK, run by the real loop
 * behind the real server, and read by a real WebSocket client as `llm.thinking.*` frames.
 */

interface ReasoningCase {
  readonly name: string;
  readonly engine: (server: ReplayServer) => Engine;
  readonly replies: readonly ReplayResponse[];
  readonly reasoning: string;
  /** What the model did right after reasoning: its first answer text, or a tool call. */
  readonly after: 'llm.delta' | 'tool.start';
}

const quiet = { logLevel: 'off' as const };

const cases: readonly ReasoningCase[] = [
  {
    name: 'Anthropic Messages (thinking_delta)',
    engine: (s) => createAnthropicEngine({ apiKey: 'sk-ant-test', baseURL: s.url(), clientOptions: quiet }),
    replies: [stream(typedFrames(loadChunks('anthropic-clear-thinking.1')))],
    reasoning: 'The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185',
    after: 'llm.delta',
  },
  {
    name: 'OpenAI Chat Completions (reasoning_content)',
    engine: (s) => createOpenAIChatEngine({ apiKey: 'sk-test', baseURL: s.url('/v1'), clientOptions: quiet }),
    replies: [stream(chatFrames(loadChunks('openai-chat-deepseek-reasoning.excerpt')))],
    reasoning: 'We need answer simple. Need count r in strawberry.',
    after: 'llm.delta',
  },
  {
    name: 'OpenAI Responses (reasoning summary)',
    engine: (s) => createOpenAIResponsesEngine({ apiKey: 'sk-test', baseURL: s.url('/v1'), clientOptions: quiet }),
    // This recording reasons, then calls the calculator; the answer comes in the second inference.
    replies: [
      stream(typedFrames(loadChunks('openai-responses-reasoning-summary.excerpt'))),
      stream(typedFrames(loadChunks('openai-responses-phase.1'))),
    ],
    reasoning: '**Calculating step-by-step',
    after: 'tool.start',
  },
];

const calculator = defineTool({
  name: 'calculator',
  description: 'Adds, subtracts, multiplies or divides two numbers',
  parameters: z.object({ a: z.number(), b: z.number(), op: z.enum(['add', 'sub', 'mul', 'div']) }),
  execute: ({ a, b }) => ({ value: a + b }),
});

describe.each(cases)('$name reasoning on the wire', (provider) => {
  let replay: ReplayServer;
  let t: TestServer;
  beforeEach(async () => {
    replay = await startReplayServer();
    t = await startTestServer({ runtime: { engine: provider.engine(replay), tools: [calculator] } });
  });
  afterEach(async () => {
    await t.close();
    await replay.close();
  });

  it('should stream llm.thinking start, growing deltas and final before the answer', async () => {
    replay.enqueue(...provider.replies);
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=thinking`);
    try {
      await post(t.base, '/chat', { prompt: 'Think, then answer.', conv_id: 'thinking' });
      const end = await ws.next('run.end');
      expect(end.status).toBe('completed');

      const frames = ws.sequenced;
      const at = (type: string): number => frames.findIndex((frame) => frame.type === type);
      const thinking = frames.filter((frame) => frame.type.startsWith('llm.thinking.'));
      const start = thinking[0] as Frame;
      const deltas = thinking.filter((frame) => frame.type === 'llm.thinking.delta');
      const final = thinking.at(-1) as Frame;

      expect(start).toMatchObject({ type: 'llm.thinking.start', id: expect.stringMatching(/:thinking$/) });
      expect(thinking.every((frame) => frame.id === start.id)).toBe(true);
      // The thinking block belongs to the message it precedes: `<message id>:thinking`.
      expect(start.id).toBe(`${frames[at('llm.start')]!.id}:thinking`);
      expect(deltas.length).toBeGreaterThan(1);
      deltas.reduce((previous, frame) => {
        expect(frame.cumulative).toBe(previous + frame.delta);
        return frame.cumulative as string;
      }, '');
      expect(final).toEqual(expect.objectContaining({ type: 'llm.thinking.final', text: provider.reasoning }));
      expect(deltas.at(-1)!.cumulative).toBe(provider.reasoning);

      expect(at('llm.start')).toBeLessThan(at('llm.thinking.start'));
      expect(frames.indexOf(final)).toBeLessThan(at(provider.after));
      expect(at('llm.delta')).toBeGreaterThan(frames.indexOf(final));
    } finally {
      await ws.close();
    }
  });
});
