import { EventType } from '@ag-ui/core';
import { z } from 'zod';
import { createScriptedEngine } from '../../src/engines/scripted.js';
import { defineAgentTool } from '../../src/tools/define-agent-tool.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createAgUiClient, eventOf } from '../helpers/ag-ui-client.js';
import { NodeChat } from '../helpers/ai-sdk-chat.js';
import { get, startTestServer, type TestServer } from '../helpers/server-harness.js';

/**
 * A child run's pause through the frontends' own clients (docs/protocol.md, Agents inside agents): an interrupt of
 * the root thread's run for `@ag-ui/client`, approval requests for the `ai` package's chat, each answered there;
 * the child's own messages stay out of the root's, and its end does not end the root's stream.
 */
describe('a nested pause through AG-UI and the AI SDK chat', () => {
  let t: TestServer;
  let n = 0;
  beforeAll(async () => {
    // The child's `gated_add` asks for a pause itself, so neither client needs step mode.
    const gated = defineTool({
      name: 'gated_add',
      description: 'Adds, after a person approves.',
      parameters: z.object({ a: z.number(), b: z.number() }),
      breakpoint: true,
      execute: ({ a, b }) => ({ sum: a + b }),
    });
    const research = defineAgentTool({
      name: 'research',
      description: 'Hands a sum to the research agent.',
      parameters: z.object({ prompt: z.string() }),
      agent: {
        tools: [gated],
        engine: createScriptedEngine({ responses: [{ text: 'Child thinking aloud.', tool_calls: [{ id: 'a1', name: 'gated_add', arguments: { a: 2, b: 3 } }] }, { text: 'five' }] }),
      },
    });
    t = await startTestServer({
      debug: true,
      script: { responses: [{ tool_calls: [{ id: 'r1', name: 'research', arguments: { prompt: 'add 2 and 3' } }] }, { text: 'It is five.' }] },
      runtime: { tools: [research], pauseTimeoutMs: 20_000 },
    });
  });
  afterAll(() => t.close());

  it('should interrupt the AG-UI run at the child pause, name the path, and finish the root after the resume', async () => {
    const threadId = `nested-agui-${++n}`;
    const client = createAgUiClient(`${t.base}/ag-ui`, threadId, { prompt: 'go' });
    const first = await client.run({});
    expect(eventOf(first, EventType.RUN_FINISHED).outcome?.type).toBe('interrupt');
    // The root's call to the agent; nothing of the child's text.
    expect(first.events.filter((event) => event.type === EventType.TEXT_MESSAGE_CONTENT)).toEqual([]);
    const [pause] = (await get(t.base, `/pauses?conv_id=${threadId}`)).body.pauses;
    expect(pause).toMatchObject({ depth: 1, path: [expect.objectContaining({ name: 'research', tool_call_id: 'r1' })] });
    expect(client.agent.pendingInterrupts).toEqual([
      expect.objectContaining({ id: `${pause.pause_id}:a1`, toolCallId: 'a1', message: expect.stringMatching(/^research: /) }),
    ]);
    const second = await client.resume(() => ({ approved: true }));
    expect(eventOf(second, EventType.RUN_FINISHED).outcome).toEqual({ type: 'success' });
    expect(eventOf(second, EventType.TOOL_CALL_RESULT)).toMatchObject({ toolCallId: 'r1', content: '"five"' });
    expect(second.events.filter((event) => event.type === EventType.TOOL_CALL_RESULT)).toHaveLength(1);
    expect(client.agent.pendingInterrupts).toEqual([]);
  });

  it('should show the child call as a tool part of its own with an approval request, and go on once it is approved', async () => {
    const id = `nested-aisdk-${++n}`;
    const chat = new NodeChat(`${t.base}/ai-sdk/chat`, id);
    await chat.sendMessage({ text: 'go' });
    await chat.settled();
    expect(chat.plain.error).toBeUndefined();
    const [pause] = (await get(t.base, `/pauses?conv_id=${id}`)).body.pauses;
    const nestedId = `${pause.inference_id}:a1`;
    expect(chat.toolParts()).toEqual([
      expect.objectContaining({ type: 'tool-research', toolCallId: 'r1', state: 'input-available' }),
      expect.objectContaining({ type: 'tool-gated_add', toolCallId: nestedId, state: 'approval-requested', input: { a: 2, b: 3 }, approval: { id: `${pause.pause_id}:a1` } }),
    ]);
    await chat.addToolApprovalResponse({ id: `${pause.pause_id}:a1`, approved: true });
    await chat.settled();
    expect(chat.plain.error).toBeUndefined();
    expect(chat.toolParts()).toEqual([
      expect.objectContaining({ toolCallId: 'r1', state: 'output-available', output: 'five' }),
      expect.objectContaining({ toolCallId: nestedId, state: 'approval-responded' }),
    ]);
    const texts = chat.plain.messages.at(-1)?.parts.filter((part) => part.type === 'text').map((part) => (part as { text: string }).text);
    expect(texts).toEqual(['It is five.']);
  });
});
