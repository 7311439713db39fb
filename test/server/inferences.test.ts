import type { Engine, InferenceRequest } from '../../src/core/engine.js';
import { systemPrompt } from '../../src/engines/middlewares.js';
import { createScriptedEngine } from '../../src/engines/scripted.js';
import { parseTokens } from '../../src/server/auth.js';
import { get, post, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient, type Frame } from '../helpers/server-ws-client.js';

// Issue 12 item 4: "each inference shows what was sent to the model (the transcript and tool specs the
// engine received)". The engine here is a spy around the scripted engine, so the test compares the
// route's answer with the very requests the engine got, after the runtime's middlewares.

/** The scripted engine, keeping every request it receives. */
function spyEngine(script: Parameters<typeof createScriptedEngine>[0]): { engine: Engine; received: InferenceRequest[] } {
  const inner = createScriptedEngine(script);
  const received: InferenceRequest[] = [];
  return {
    received,
    engine: { ...inner, infer: (request) => (received.push(request), inner.infer(request)) },
  };
}

const ALICE = 'tok-alice-inferences';
const BOB = 'tok-bob-inferences';

/** The `llm.final` frames of one run, to its end. */
async function runToEnd(t: TestServer, conv: string, body: Record<string, unknown>, onPause?: (pause: Frame, ws: SemClient) => Promise<void>): Promise<Frame[]> {
  const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${conv}&access_token=${ALICE}`);
  expect((await post(t.base, '/chat', { conv_id: conv, ...body }, ALICE)).status).toBe(200);
  if (onPause) await onPause(await ws.next('debugger.pause'), ws);
  await ws.waitFor((frame) => frame.type === 'run.end');
  const finals = ws.frames.filter((frame) => frame.type === 'llm.final');
  await ws.close();
  return finals;
}

describe('GET /conversations/:conv_id/inferences/:message_id', () => {
  let t: TestServer;
  let received: InferenceRequest[];
  beforeAll(async () => {
    const spy = spyEngine({
      // Played from the start in each conversation.
      responses: [{ text: 'Echoing.', tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'as asked' } }] }, { text: 'Echoed.' }, { text: 'One.' }, { text: 'Two.' }],
    });
    received = spy.received;
    t = await startTestServer({
      debug: true,
      tokens: parseTokens(`alice:${ALICE},bob:${BOB}`),
      inferenceLog: { perConversation: 4 },
      runtime: { engine: spy.engine, middlewares: [systemPrompt('Be brief.')] },
    });
  });
  afterAll(() => t.close());

  it('should answer the transcript and tool specs each inference sent, as the engine received them', async () => {
    const conv = 'inferences-exact';
    const finals = await runToEnd(t, conv, { prompt: 'echo it' });
    expect(finals.map((frame) => frame.id)).toEqual([`${finals[0]?.metadata.inference_id}:1`, `${finals[0]?.metadata.inference_id}:2`]);
    expect(received).toHaveLength(2);
    for (const [index, final] of finals.entries()) {
      const reply = await get(t.base, `/conversations/${conv}/inferences/${encodeURIComponent(final.id)}`, ALICE);
      expect(reply.status).toBe(200);
      const sent = received[index] as InferenceRequest;
      expect(reply.body).toEqual({
        conv_id: conv,
        message_id: final.id,
        inference_id: final.metadata.inference_id,
        turn_id: final.metadata.turn_id,
        messages: JSON.parse(JSON.stringify(sent.blocks)),
        tools: JSON.parse(JSON.stringify(sent.tools)),
      });
    }
    const [first, second] = await Promise.all(finals.map((final) => get(t.base, `/conversations/${conv}/inferences/${final.id}`, ALICE)));
    // After the middleware: the system prompt it added is part of what was sent.
    expect(first?.body.messages.map((block: { kind: string }) => block.kind)).toEqual(['system', 'user']);
    expect(first?.body.messages[0].payload).toEqual({ text: 'Be brief.' });
    expect(first?.body.tools.map((tool: { name: string }) => tool.name)).toEqual(['add', 'echo']);
    expect(first?.body.tools[0]).toMatchObject({ name: 'add', description: 'Adds two numbers.', parameters: { type: 'object' } });
    // The second inference saw the first's answer and the tool's result.
    expect(second?.body.messages.map((block: { kind: string }) => block.kind)).toEqual(['system', 'user', 'llm_text', 'tool_call', 'tool_use']);
    expect(second?.body.messages[4].payload).toMatchObject({ id: 'c1', result: { text: 'as asked' } });
  });

  it('should show a run’s own system prompt and tool allow-list, and arguments as edited at the pause', async () => {
    const conv = 'inferences-overrides';
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${conv}&access_token=${ALICE}`);
    await ws.close();
    expect((await post(t.base, '/debug/step/enable', { conv_id: conv, phases: ['after_inference'] }, ALICE)).status).toBe(200);
    const finals = await runToEnd(t, conv, { prompt: 'echo it', overrides: { tools: ['echo'], system_prompt: 'Only echo.' } }, async (pause) => {
      const edited = await post(t.base, '/debug/continue', { pause_id: pause.pause_id, action: 'edit', edits: { c1: { text: 'edited' } } }, ALICE);
      expect(edited.status).toBe(200);
    });
    const [first, second] = await Promise.all(finals.map((final) => get(t.base, `/conversations/${conv}/inferences/${final.id}`, ALICE)));
    expect(first?.body.messages[0]).toMatchObject({ kind: 'system', payload: { text: 'Only echo.' } });
    expect(first?.body.tools.map((tool: { name: string }) => tool.name)).toEqual(['echo']);
    const call = second?.body.messages.find((block: { kind: string }) => block.kind === 'tool_call');
    expect(call.payload.args).toEqual({ text: 'edited' });
    expect(second?.body.messages.at(-1).payload).toMatchObject({ id: 'c1', result: { text: 'edited' } });
    expect(second?.body).toEqual(JSON.parse(JSON.stringify({ ...second?.body, messages: received.at(-1)?.blocks })));
  });

  it('should keep the newest requests per conversation, list them, and say clearly when one is not kept', async () => {
    const conv = 'inferences-bounded';
    const ids: string[] = [];
    for (const prompt of ['one', 'two', 'three']) ids.push(...(await runToEnd(t, conv, { prompt })).map((frame) => frame.id));
    // Each conversation keeps its own: four here (a tool round then two answers), two in the first.
    const listed = await get(t.base, `/conversations/${conv}/inferences`, ALICE);
    expect(ids).toHaveLength(4);
    expect(listed.body).toEqual({ conv_id: conv, message_ids: ids, kept_per_conversation: 4 });
    expect((await get(t.base, '/conversations/inferences-exact/inferences', ALICE)).body.message_ids).toHaveLength(2);

    const missing = await get(t.base, `/conversations/${conv}/inferences/${ids[0]?.replace(/:1$/, ':7')}`, ALICE);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('unknown_inference');
    expect(missing.body.error.message).toMatch(/keeps the last 4 per conversation/);
  });

  it('should drop the oldest request of a conversation past its bound', async () => {
    const spy = spyEngine({ responses: [{ text: 'a' }, { text: 'b' }, { text: 'c' }] });
    const small = await startTestServer({ inferenceLog: { perConversation: 2 }, runtime: { engine: spy.engine } });
    try {
      const ids: string[] = [];
      for (const prompt of ['a', 'b', 'c']) {
        const ws = await SemClient.connect(`${small.wsBase}/ws?conv_id=bounded`);
        await post(small.base, '/chat', { conv_id: 'bounded', prompt });
        ids.push((await ws.next('llm.final')).id);
        await ws.next('run.end');
        await ws.close();
      }
      expect((await get(small.base, '/conversations/bounded/inferences')).body.message_ids).toEqual(ids.slice(1));
      expect((await get(small.base, `/conversations/bounded/inferences/${ids[0]}`)).status).toBe(404);
      expect((await get(small.base, `/conversations/bounded/inferences/${ids[2]}`)).body.messages.at(-1)).toMatchObject({ kind: 'user', payload: { text: 'c' } });
    } finally {
      await small.close();
    }
  });

  it('should check the caller, the conversation and the id like every conversation route', async () => {
    const conv = 'inferences-exact';
    const id = (await get(t.base, `/conversations/${conv}/inferences`, ALICE)).body.message_ids[0] as string;
    expect((await get(t.base, `/conversations/${conv}/inferences/${id}`)).status).toBe(401);
    const foreign = await get(t.base, `/conversations/${conv}/inferences/${id}`, BOB);
    expect(foreign.status).toBe(403);
    expect(foreign.body.error.code).toBe('forbidden');
    expect((await get(t.base, `/conversations/${conv}/inferences`, BOB)).status).toBe(403);
    const unknownConv = await get(t.base, `/conversations/no-such-conv/inferences/${id}`, ALICE);
    expect(unknownConv.status).toBe(404);
    expect(unknownConv.body.error.code).toBe('not_found');
    const bad = await get(t.base, `/conversations/${conv}/inferences/not-a-message-id`, ALICE);
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields[0]).toMatchObject({ field: 'message_id' });
    const badConv = await get(t.base, `/conversations/bad%20conv/inferences/${id}`, ALICE);
    expect(badConv.status).toBe(400);
    const wrongMethod = await post(t.base, `/conversations/${conv}/inferences/${id}`, {}, ALICE);
    expect(wrongMethod.status).toBe(405);
  });
});
