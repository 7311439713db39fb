import { z } from 'zod';
import { createScriptedEngine } from '../../src/engines/scripted.js';
import { defineAgentTool } from '../../src/tools/define-agent-tool.js';
import { createTestTools, get, post, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

/**
 * An agent tool over the wire (docs/protocol.md, Agents inside agents): the child's frames in the root
 * conversation's stream with `parent`, `depth` and one `seq`, its pause listed and answered by `pause_id` like any
 * other, with its `depth` and `path`.
 */
describe('an agent tool through the server', () => {
  let t: TestServer;
  beforeAll(async () => {
    // Per conversation: the root asks `research`, its child adds (pausing there), then each answers.
    const child = createScriptedEngine({ responses: [{ tool_calls: [{ id: 'a1', name: 'add', arguments: { a: 2, b: 3 } }] }, { text: 'five' }] });
    const research = defineAgentTool({
      name: 'research',
      description: 'Hands a question to the research agent.',
      parameters: z.object({ prompt: z.string() }),
      agent: { engine: child },
    });
    t = await startTestServer({
      debug: true,
      script: { responses: [{ tool_calls: [{ id: 'r1', name: 'research', arguments: { prompt: 'add 2 and 3' } }] }, { text: 'it is five' }] },
      runtime: { tools: [...createTestTools(), research], pauseTimeoutMs: 10_000 },
    });
  });
  afterAll(() => t.close());

  it('should stream the child in the root conversation and answer its pause by pause_id, without the debugger route', async () => {
    const conv = 'agents-1';
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${conv}`);
    expect((await post(t.base, '/chat', { prompt: 'go', conv_id: conv, overrides: { step_mode: true } })).status).toBe(200);
    const rootPause = await ws.next('debugger.pause');
    expect(rootPause).not.toHaveProperty('depth');
    expect((await post(t.base, `/pauses/${rootPause.pause_id}`, {})).status).toBe(200);

    const childStart = await ws.waitFor((frame) => frame.type === 'run.start' && frame.depth === 1);
    const root = rootPause.metadata.inference_id;
    expect(childStart).toMatchObject({ agent: 'research', parent: { inference_id: root, tool_call_id: 'r1' }, depth: 1 });
    const childPause = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.depth === 1);
    expect(childPause).toMatchObject({
      inference_id: childStart.inference_id,
      parent: { inference_id: root, tool_call_id: 'r1' },
      metadata: { inference_id: childStart.inference_id, conversation_id: conv },
      path: [{ inference_id: root, tool_call_id: 'r1', name: 'research' }],
      extra: { pending_tools: ['add'] },
    });
    const listed = (await get(t.base, `/debug/pauses?conv_id=${conv}`)).body.pauses;
    expect(listed).toEqual([expect.objectContaining({ pause_id: childPause.pause_id, depth: 1, path: childPause.path })]);

    // Arguments edited at the child's pause are checked against the child's tool.
    expect((await post(t.base, `/pauses/${childPause.pause_id}`, { action: 'edit', edits: { a1: { a: 'two' } } })).status).toBe(400);
    expect((await post(t.base, `/pauses/${childPause.pause_id}`, { action: 'edit', edits: { a1: { a: 4, b: 3 } } })).status).toBe(200);
    expect(await ws.waitFor((frame) => frame.type === 'tool.result' && frame.id === 'a1')).toMatchObject({ result: { sum: 7 }, depth: 1 });
    for (;;) {
      const pause = await ws.waitFor((frame) => frame.type === 'debugger.pause' && !ws.sequenced.some((later) => later.type === 'debugger.resume' && later.pause_id === frame.pause_id));
      expect((await post(t.base, `/pauses/${pause.pause_id}`, {})).status).toBe(200);
      await ws.waitFor((frame) => frame.type === 'debugger.resume' && frame.pause_id === pause.pause_id);
      if (pause.depth === undefined && pause.phase === 'after_tools') break;
    }
    const end = await ws.waitFor((frame) => frame.type === 'run.end' && frame.depth === undefined);
    expect(end).toMatchObject({ status: 'completed' });
    // One stream: the root's and the child's frames share one gapless seq.
    expect(ws.sequenced.map((frame) => frame.seq)).toEqual(Array.from({ length: end.seq as number }, (_, i) => i + 1));
    const research = ws.sequenced.find((frame) => frame.type === 'tool.result' && frame.id === 'r1');
    expect(research).toMatchObject({ result: 'five' });
    expect(research).not.toHaveProperty('depth');
    await ws.close();
  });
});
