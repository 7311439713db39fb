import { z } from 'zod';
import { defineTool } from '../../src/tools/define-tool.js';
import { createTestTools, get, post, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

/** Per conversation: echo, add, rm (a breakpoint when the path is under /etc), then an answer. */
const script = {
  responses: [
    { tool_calls: [{ id: 'e1', name: 'echo', arguments: { text: 'hi' } }] },
    { tool_calls: [{ id: 'a1', name: 'add', arguments: { a: 1, b: 2 } }] },
    { tool_calls: [{ id: 'r1', name: 'rm', arguments: { path: '/etc/passwd' } }] },
    { text: 'done' },
  ],
};

const rm = defineTool({
  name: 'rm',
  description: 'Removes a file (pretends to).',
  parameters: z.object({ path: z.string() }),
  breakpoint: ({ path }) => path.startsWith('/etc'),
  execute: ({ path }) => ({ removed: path }),
});

let n = 0;
const nextConv = () => `bp-${++n}`;

describe('breakpoints over the wire (docs/protocol.md, Breakpoints and result edits)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script, runtime: { tools: [...createTestTools(), rm], pauseTimeoutMs: 10_000 } });
  });
  afterAll(() => t.close());

  it("should pause for a tool's breakpoint with step mode off, marked in the frame, and keep it on disable", async () => {
    const conv = nextConv();
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${conv}`);
    expect((await post(t.base, '/chat', { prompt: 'go', conv_id: conv })).status).toBe(200);
    const pause = await ws.next('debugger.pause');
    expect(pause).toMatchObject({
      phase: 'after_inference',
      extra: { pending_tools: ['rm'], tool_calls: [{ id: 'r1', name: 'rm', input: { path: '/etc/passwd' }, breakpoint: true }] },
    });
    expect((await get(t.base, `/conversations/${conv}`)).body).toMatchObject({ step_mode: false, pending_pauses: [{ pause_id: pause.pause_id }] });
    expect((await get(t.base, `/conversations/${conv}`)).body.step_filter).toBeUndefined();
    expect(await post(t.base, '/debug/step/disable', { conv_id: conv })).toMatchObject({ status: 200, body: { released: 0 } });
    expect((await get(t.base, `/debug/pauses?conv_id=${conv}`)).body.pauses).toHaveLength(1);
    expect((await post(t.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    await ws.next('run.end');
    const turn = (await get(t.base, `/conversations/${conv}`)).body.turns[0];
    expect(turn.blocks.find((block: any) => block.kind === 'tool_use' && block.payload.id === 'r1').payload.result).toEqual({ removed: '/etc/passwd' });
    await ws.close();
  });

  it('should pause only for the filtered tools and phases, and replace a result the model then sees', async () => {
    const conv = nextConv();
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${conv}`);
    expect((await post(t.base, '/chat', { prompt: 'go', conv_id: conv, overrides: { step_mode: true } })).status).toBe(200);
    const first = await ws.next('debugger.pause');
    expect(first.extra.tool_calls).toEqual([{ id: 'e1', name: 'echo', input: { text: 'hi' } }]);
    expect(await post(t.base, '/debug/step/enable', { conv_id: conv, tools: ['add'] })).toMatchObject({ status: 200, body: { ok: true, conv_id: conv } });
    expect((await get(t.base, `/conversations/${conv}`)).body).toMatchObject({ step_mode: true, step_filter: { tools: ['add'] } });
    // At after_inference, results are not editable.
    expect(await post(t.base, '/debug/continue', { pause_id: first.pause_id, action: 'edit', results: { e1: 1 } })).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_action' } },
    });
    await post(t.base, '/debug/continue', { pause_id: first.pause_id });

    // echo ran (not in the filter): no after_tools pause; add is next.
    const addPause = await ws.next('debugger.pause');
    expect(addPause).toMatchObject({ phase: 'after_inference', extra: { tool_calls: [{ id: 'a1', name: 'add' }] } });
    await post(t.base, '/debug/continue', { pause_id: addPause.pause_id });
    const afterAdd = await ws.next('debugger.pause');
    expect(afterAdd.phase).toBe('after_tools');
    expect(await post(t.base, '/debug/continue', { pause_id: afterAdd.pause_id, action: 'edit', results: { e1: { text: 'x' } } })).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_action', details: { tool_call_ids: ['e1'] } } },
    });
    expect(await post(t.base, '/debug/continue', { pause_id: afterAdd.pause_id, action: 'edit', results: 5 })).toMatchObject({ status: 400 });
    expect(await post(t.base, '/debug/continue', { pause_id: afterAdd.pause_id, action: 'edit', results: { a1: { sum: 42 } } })).toMatchObject({ status: 200 });
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: afterAdd.pause_id, reason: 'edited' });

    // rm's own breakpoint still pauses (the filter does not name it); it ran no after_tools pause.
    const rmPause = await ws.next('debugger.pause');
    expect(rmPause.extra.tool_calls).toEqual([{ id: 'r1', name: 'rm', input: { path: '/etc/passwd' }, breakpoint: true }]);
    await post(t.base, '/debug/continue', { pause_id: rmPause.pause_id });
    await ws.next('run.end');
    expect(ws.frames.filter((frame) => frame.type === 'debugger.pause')).toHaveLength(4);

    const blocks = (await get(t.base, `/conversations/${conv}`)).body.turns[0].blocks;
    const use = blocks.find((block: any) => block.kind === 'tool_use' && block.payload.id === 'a1');
    expect(use).toMatchObject({ payload: { id: 'a1', result: { sum: 42 } }, metadata: { original_result: { sum: 3 }, edited: true } });
    const decisions = (await get(t.base, `/conversations/${conv}/decisions`)).body.decisions;
    expect(decisions.find((decision: any) => decision.pause_id === afterAdd.pause_id)).toMatchObject({
      phase: 'after_tools',
      reason: 'edited',
      tool_call_ids: ['a1'],
      results: { a1: { before: { sum: 3 }, after: { sum: 42 } } },
    });
    await ws.close();
  });

  it('should refuse a filter with an unknown phase or a tools value that is not a list, naming the field', async () => {
    const conv = nextConv();
    expect((await post(t.base, '/chat', { prompt: 'go', conv_id: conv })).status).toBe(200);
    const badPhase = await post(t.base, '/debug/step/enable', { conv_id: conv, phases: ['before_lunch'] });
    expect(badPhase).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    expect(JSON.stringify(badPhase.body.error.details)).toContain('phases');
    const badTools = await post(t.base, '/debug/step/enable', { conv_id: conv, tools: 'add' });
    expect(badTools.status).toBe(400);
    expect(JSON.stringify(badTools.body.error.details)).toContain('tools');
    expect((await get(t.base, `/conversations/${conv}`)).body.step_filter).toBeUndefined();
    expect(await post(t.base, '/debug/step/enable', { conv_id: conv, phases: ['after_tools'] })).toMatchObject({ status: 200 });
    expect((await get(t.base, `/conversations/${conv}`)).body.step_filter).toEqual({ phases: ['after_tools'] });
  });
});

describe('step filter and /chat overrides', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script, runtime: { tools: [...createTestTools(), rm], pauseTimeoutMs: 10_000 } });
  });
  afterAll(() => t.close());

  it('should keep the filter when a later /chat sends step_mode: true again', async () => {
    const conv = nextConv();
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${conv}`);
    expect((await post(t.base, '/chat', { prompt: 'go', conv_id: conv, overrides: { step_mode: true } })).status).toBe(200);
    const first = await ws.next('debugger.pause');
    await post(t.base, '/debug/step/enable', { conv_id: conv, tools: ['echo'], phases: ['after_inference'] });
    await post(t.base, '/debug/continue', { pause_id: first.pause_id });
    const rmPause = await ws.next('debugger.pause');
    await post(t.base, '/debug/continue', { pause_id: rmPause.pause_id });
    await ws.next('run.end');
    expect((await post(t.base, '/chat', { prompt: 'again', conv_id: conv, overrides: { step_mode: true } })).status).toBe(200);
    expect((await get(t.base, `/conversations/${conv}`)).body.step_filter).toEqual({ tools: ['echo'], phases: ['after_inference'] });
    await post(t.base, '/chat/cancel', { conv_id: conv });
    await ws.close();
  });
});
