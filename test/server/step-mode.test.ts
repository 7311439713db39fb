import type { TimeoutAction } from '../../src/streams/step-controller.js';
import { get, post, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

let n = 0;
/** A fresh conversation with a client joined before its first run, so it misses nothing. */
async function startStepping(t: TestServer): Promise<{ ws: SemClient; conv: string; chat: { session_id: string } }> {
  const conv = `step-${++n}`;
  const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${conv}`);
  const chat = await post(t.base, '/chat', { prompt: 'add please', conv_id: conv, overrides: { step_mode: true } });
  expect(chat.status).toBe(200);
  return { ws, conv, chat: chat.body };
}

describe('step mode over the wire', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, runtime: { pauseTimeoutMs: 10_000 } });
  });
  afterAll(() => t.close());

  it('should pause after inference and after tools, and continue through both', async () => {
    const { ws, conv, chat } = await startStepping(t);
    const pause = await ws.next('debugger.pause');
    expect(pause).toMatchObject({
      id: pause.pause_id,
      phase: 'after_inference',
      summary: expect.stringContaining('add'),
      deadline_ms: expect.any(Number),
      metadata: { session_id: chat.session_id, inference_id: expect.any(String), turn_id: expect.any(String), conversation_id: conv },
      extra: { pending_tools: ['add'], tool_calls: [{ id: 'call_0_a', name: 'add', input: { a: 0, b: 2 } }] },
    });
    expect(pause.deadline_ms).toBeGreaterThan(Date.now() + 5000);
    expect((await get(t.base, `/debug/pauses?conv_id=${conv}`)).body.pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id })]);

    const reply = await post(t.base, '/debug/continue', { pause_id: pause.pause_id, conv_id: conv });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      ok: true,
      pause: {
        pause_id: pause.pause_id,
        phase: 'after_inference',
        summary: pause.summary,
        deadline_ms: pause.deadline_ms,
        conv_id: conv,
        session_id: chat.session_id,
        inference_id: pause.metadata.inference_id,
        turn_id: pause.metadata.turn_id,
        tool_calls: [{ id: 'call_0_a', name: 'add', input: { a: 0, b: 2 } }],
      },
    });
    expect(await ws.next('debugger.resume')).toMatchObject({ id: pause.pause_id, pause_id: pause.pause_id, reason: 'continued' });
    expect(await ws.next('tool.delta')).toMatchObject({ id: 'call_0_a', patch: { exec: true, input: { a: 0, b: 2 } } });
    expect(await ws.next('tool.result')).toMatchObject({ id: 'call_0_a', result: { sum: 2 } });
    await ws.next('tool.done');
    const afterTools = await ws.next('debugger.pause');
    expect(afterTools.phase).toBe('after_tools');
    expect(await post(t.base, '/debug/continue', { pause_id: afterTools.pause_id, action: 'deny' })).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_action' } },
    });
    expect((await post(t.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    expect((await ws.next('llm.final')).text).toBe('The sum is 2. Done.');
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });

    const again = await post(t.base, '/debug/continue', { pause_id: pause.pause_id });
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'pause_resolved', details: { reason: 'continued' } } } });
    await ws.close();
  });

  it('should deny: the tool does not run and the model sees the reason', async () => {
    const { ws } = await startStepping(t);
    const pause = await ws.next('debugger.pause');
    const denied = await post(t.base, '/debug/continue', { pause_id: pause.pause_id, action: 'deny', reason: 'not today' });
    expect(denied.status).toBe(200);
    expect(await ws.next('debugger.resume')).toMatchObject({ reason: 'denied' });
    const result = await ws.next('tool.result');
    expect(result.error).toContain('denied by operator: not today');
    const afterTools = await ws.next('debugger.pause');
    await post(t.base, '/debug/continue', { pause_id: afterTools.pause_id });
    await ws.next('run.end');
    expect(ws.frames.some((frame) => frame.type === 'tool.delta')).toBe(false);
    await ws.close();
  });

  it('should edit: invalid arguments are refused with 400, valid ones run and the transcript keeps the original', async () => {
    const { ws, conv } = await startStepping(t);
    const pause = await ws.next('debugger.pause');
    const invalid = await post(t.base, '/debug/continue', { pause_id: pause.pause_id, action: 'edit', edits: { call_0_a: { a: 'ten' } } });
    expect(invalid).toMatchObject({ status: 400, body: { error: { code: 'invalid_arguments', details: { edits: { call_0_a: expect.any(Array) } } } } });
    const unknownCall = await post(t.base, '/debug/continue', { pause_id: pause.pause_id, action: 'edit', edits: { nope: { a: 1, b: 1 } } });
    expect(unknownCall.status).toBe(400);
    const edited = await post(t.base, '/debug/continue', { pause_id: pause.pause_id, action: 'edit', edits: { call_0_a: { a: 10, b: 5 } } });
    expect(edited.status).toBe(200);
    expect(await ws.next('debugger.resume')).toMatchObject({ reason: 'edited' });
    expect(await ws.next('tool.delta')).toMatchObject({ patch: { exec: true, input: { a: 10, b: 5 } } });
    expect(await ws.next('tool.result')).toMatchObject({ result: { sum: 15 } });
    const afterTools = await ws.next('debugger.pause');
    await post(t.base, '/debug/continue', { pause_id: afterTools.pause_id });
    await ws.next('run.end');
    const turn = (await get(t.base, `/conversations/${conv}`)).body.turns[0];
    const call = turn.blocks.find((block: { kind: string }) => block.kind === 'tool_call');
    expect(JSON.stringify(call)).toContain('"a":0');
    await ws.close();
  });

  it('should refuse an unknown action with 400 invalid_action and leave the pause waiting', async () => {
    const { ws, conv } = await startStepping(t);
    const pause = await ws.next('debugger.pause');
    const refused = await post(t.base, '/debug/continue', { pause_id: pause.pause_id, action: 'explode' });
    expect(refused).toMatchObject({ status: 400, body: { error: { code: 'invalid_action', message: expect.stringContaining('explode') } } });
    expect((await get(t.base, `/debug/pauses?conv_id=${conv}`)).body.pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id })]);
    await post(t.base, '/chat/cancel', { conv_id: conv });
    await ws.next('run.end');
    await ws.close();
  });

  it('should release every pause when step mode is disabled, and not pause again', async () => {
    const { ws, conv } = await startStepping(t);
    await ws.next('debugger.pause');
    const disabled = await post(t.base, '/debug/step/disable', { conv_id: conv });
    expect(disabled.body).toMatchObject({ ok: true, released: 1 });
    expect(await ws.next('debugger.resume')).toMatchObject({ reason: 'disabled' });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    expect(ws.frames.filter((frame) => frame.type === 'debugger.pause')).toHaveLength(1);
    await ws.close();
  });

  it('should cancel while paused: run.end cancelled arrives promptly and no pause follows', async () => {
    const { ws, conv } = await startStepping(t);
    await ws.next('debugger.pause');
    const started = Date.now();
    expect((await post(t.base, '/chat/cancel', { conv_id: conv })).body).toEqual({ ok: true, cancelled: true });
    expect(await ws.next('debugger.resume')).toMatchObject({ reason: 'cancelled' });
    expect(await ws.next('run.end')).toMatchObject({ status: 'cancelled' });
    expect(Date.now() - started).toBeLessThan(1000);
    await ws.ping();
    expect(ws.frames.filter((frame) => frame.type === 'debugger.pause')).toHaveLength(1);
    expect(ws.frames.some((frame) => frame.type === 'tool.delta')).toBe(false);
    expect((await get(t.base, `/conversations/${conv}`)).body.running).toBe(false);
    await ws.close();
  });

  it('should keep step mode on across runs', async () => {
    const { ws, conv } = await startStepping(t);
    await post(t.base, '/debug/continue', { pause_id: (await ws.next('debugger.pause')).pause_id });
    await post(t.base, '/debug/continue', { pause_id: (await ws.next('debugger.pause')).pause_id });
    await ws.next('run.end');
    expect((await post(t.base, '/chat', { prompt: 'again', conv_id: conv })).status).toBe(200);
    expect((await ws.next('debugger.pause')).phase).toBe('after_inference');
    await post(t.base, '/chat/cancel', { conv_id: conv });
    await ws.next('run.end');
    await ws.close();
  });
});

describe.each<[TimeoutAction, string]>([
  ['continue', 'completed'],
  ['deny', 'completed'],
  ['abort', 'failed'],
])('a pause deadline with timeout action %s', (action, status) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, runtime: { pauseTimeoutMs: 250, timeoutAction: action } });
  });
  afterAll(() => t.close());

  it(`should resolve as timeout and end the run ${status}`, async () => {
    const { ws } = await startStepping(t);
    const pause = await ws.next('debugger.pause');
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'timeout' });
    const end = await ws.next('run.end');
    expect(end.status).toBe(status);
    const result = ws.frames.find((frame) => frame.type === 'tool.result');
    if (action === 'continue') expect(result).toMatchObject({ result: { sum: 2 } });
    if (action === 'deny') expect(result?.error).toContain('denied by operator');
    if (action === 'abort') expect(result).toBeUndefined();
    expect((await post(t.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(409);
    await ws.close();
  });
});
