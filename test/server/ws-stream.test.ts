import { z } from 'zod';
import type { Script } from '../../src/engines/scripted.js';
import { createEvent } from '../../src/streams/events.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { get, post, startTestServer, toolThenAnswer, type TestServer } from '../helpers/server-harness.js';
import { SemClient, upgradeStatus, type Frame } from '../helpers/server-ws-client.js';

const strip = (frames: Frame[]): Frame[] => frames.filter((frame) => frame.seq !== undefined);

describe('the WebSocket stream', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script: toolThenAnswer(20, 2), allowedOrigins: ['http://dashboard.example'] });
  });
  afterAll(() => t.close());

  it('should say hello first, and create the conversation it joins', async () => {
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=hello-1`);
    expect(ws.frames[0]).toEqual({
      type: 'ws.hello',
      id: expect.any(String),
      conv_id: 'hello-1',
      session_id: expect.any(String),
      server_time: expect.any(Number),
      last_seq: 0,
      pending_pauses: [],
      engine: { name: 'scripted', model: 'scripted' },
    });
    const shown = await get(t.base, '/conversations/hello-1');
    expect(shown.body.session_id).toBe(ws.hello.session_id);
    await ws.close();
  });

  it('should send every frame of a run with consecutive seqs, the same to two clients', async () => {
    const a = await SemClient.connect(`${t.wsBase}/ws?conv_id=two`);
    const b = await SemClient.connect(`${t.wsBase}/ws?conv_id=two`);
    const chat = await post(t.base, '/chat', { prompt: 'go', conv_id: 'two' });
    await a.next('run.end');
    await b.next('run.end');
    const frames = strip(a.frames);
    expect(strip(b.frames)).toEqual(frames);
    expect(frames.map((frame) => frame.seq)).toEqual(frames.map((_, i) => i + 1));
    const types = frames.map((frame) => frame.type);
    expect(types[0]).toBe('run.start');
    expect(types.at(-1)).toBe('run.end');
    for (const type of ['llm.start', 'llm.delta', 'llm.final', 'tool.start', 'tool.delta', 'tool.result', 'tool.done']) expect(types).toContain(type);
    const byType = (type: string): Frame => frames.find((frame) => frame.type === type) as Frame;
    expect(byType('run.start')).toMatchObject({ inference_id: chat.body.inference_id, turn_id: chat.body.turn_id, session_id: chat.body.session_id });
    expect(byType('llm.start')).toMatchObject({ role: 'assistant', metadata: { model: 'scripted' } });
    const deltas = frames.filter((frame) => frame.type === 'llm.delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas[1]).toMatchObject({ delta: expect.any(String), cumulative: `${deltas[0]?.delta}${deltas[1]?.delta}`, metadata: expect.any(Object) });
    expect(byType('llm.final')).toMatchObject({
      text: 'Adding two numbers.',
      metadata: { model: 'scripted', usage: { input_tokens: expect.any(Number), output_tokens: expect.any(Number) }, stop_reason: 'tool_calls', duration_ms: expect.any(Number) },
    });
    expect(byType('tool.start')).toMatchObject({ id: 'call_0_a', name: 'add', input: { a: 0, b: 2 } });
    expect(byType('tool.done')).toMatchObject({ id: 'call_0_a' });
    expect(byType('run.end')).toMatchObject({ id: chat.body.inference_id, inference_id: chat.body.inference_id, status: 'completed' });
    await Promise.all([a.close(), b.close()]);
  });

  it('should send llm.error and run.end failed when the model fails', async () => {
    const failing: Script = { responses: [{ error: 'the model is down' }] };
    const f = await startTestServer({ script: failing });
    try {
      const ws = await SemClient.connect(`${f.wsBase}/ws?conv_id=fails`);
      await post(f.base, '/chat', { prompt: 'x', conv_id: 'fails' });
      expect(await ws.next('llm.error')).toMatchObject({ message: 'the model is down', code: 'scripted_error' });
      expect(await ws.next('run.end')).toMatchObject({ status: 'failed', error: expect.any(String) });
      await ws.close();
    } finally {
      await f.close();
    }
  });

  it('should map reasoning to llm.thinking frames and log events to log frames', async () => {
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=logs`);
    const origin = { conv_id: 'logs', session_id: ws.hello.session_id, inference_id: 'inf_x', turn_id: 'turn_x' };
    const { hub } = t.server.stepwise;
    hub.publish(createEvent('reasoning-started', origin, Date.now(), {}));
    hub.publish(createEvent('reasoning-delta', origin, Date.now(), { delta: 'thinking', cumulative: 'thinking' }));
    hub.publish(createEvent('reasoning-finished', origin, Date.now(), { text: 'thinking' }));
    hub.publish(createEvent('log', origin, Date.now(), { level: 'warn', message: 'careful', fields: { n: 1 } }));
    expect(await ws.next('llm.thinking.start')).toMatchObject({ seq: 1, id: 'inf_x:thinking' });
    expect(await ws.next('llm.thinking.delta')).toMatchObject({ seq: 2, id: 'inf_x:thinking', delta: 'thinking', cumulative: 'thinking' });
    expect(await ws.next('llm.thinking.final')).toMatchObject({ seq: 3, id: 'inf_x:thinking', text: 'thinking' });
    expect(await ws.next('log')).toMatchObject({ seq: 4, level: 'warn', message: 'careful', fields: { n: 1 } });
    await ws.close();
  });

  it('should survive tool results JSON cannot encode (BigInt, cycles)', async () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic['self'] = cyclic;
    const weird = defineTool({ name: 'weird', description: '', parameters: z.object({}), execute: () => ({ big: 10n, cyclic }) });
    const script: Script = { responses: [{ tool_calls: [{ id: 'w1', name: 'weird', arguments: {} }] }, { text: 'ok' }] };
    const w = await startTestServer({ script, runtime: { tools: [weird] } });
    try {
      const ws = await SemClient.connect(`${w.wsBase}/ws?conv_id=weird`);
      await post(w.base, '/chat', { prompt: 'x', conv_id: 'weird' });
      expect(await ws.next('tool.result')).toMatchObject({ result: { big: '10', cyclic: { name: 'loop', self: '[circular]' } } });
      // The run's own fate is the engine's business (the scripted one cannot re-serialize a BigInt).
      await ws.next('run.end');
      expect((await get(w.base, '/hydrate?conv_id=weird')).body.frames).toHaveLength(ws.sequenced.length);
      expect((await get(w.base, '/healthz')).status).toBe(200);
      await ws.close();
    } finally {
      await w.close();
    }
  });

  it('should replay exactly the missed frames to a client reconnecting with since_seq, and /hydrate agrees', async () => {
    const a = await SemClient.connect(`${t.wsBase}/ws?conv_id=replay`);
    let b = await SemClient.connect(`${t.wsBase}/ws?conv_id=replay`);
    await post(t.base, '/chat', { prompt: 'one', conv_id: 'replay' });
    await b.next('run.end');
    await a.next('run.end');
    // Leave mid-run of the second run, and come back while it is still streaming.
    await post(t.base, '/chat', { prompt: 'two', conv_id: 'replay' });
    await b.next('tool.start');
    await b.close();
    const seen = strip(b.frames);
    const lastSeen = seen.at(-1)?.seq as number;
    b = await SemClient.connect(`${t.wsBase}/ws?conv_id=replay&since_seq=${lastSeen}`);
    await b.next('run.end');
    await a.next('run.end');
    const live = strip(a.frames);
    expect([...seen, ...strip(b.frames)]).toEqual(live);
    expect(strip(b.frames)[0]?.seq).toBe(lastSeen + 1);

    const hydrated = await get(t.base, '/hydrate?conv_id=replay');
    expect(hydrated.body.frames).toEqual(live.map((event) => ({ sem: true, event })));
    expect(hydrated.body.last_seq).toBe(live.length);
    const tail = await get(t.base, `/hydrate?conv_id=replay&since_seq=${lastSeen}`);
    expect(tail.body.frames.map((frame: { event: Frame }) => frame.event)).toEqual(strip(b.frames));
    await Promise.all([a.close(), b.close()]);
  });

  it('should put pending pauses in the hello of a late joiner', async () => {
    const a = await SemClient.connect(`${t.wsBase}/ws?conv_id=late`);
    await post(t.base, '/chat', { prompt: 'x', conv_id: 'late', overrides: { step_mode: true } });
    const pause = await a.next('debugger.pause');
    const late = await SemClient.connect(`${t.wsBase}/ws?conv_id=late`);
    expect(late.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, phase: 'after_inference' })]);
    expect(late.hello.last_seq).toBe(pause.seq);
    await post(t.base, '/chat/cancel', { conv_id: 'late' });
    const end = await late.next('run.end');
    expect(end.seq).toBe((await a.next('run.end')).seq);
    await Promise.all([a.close(), late.close()]);
  });

  it('should answer ping and ws.ping with ws.pong and ignore any other text', async () => {
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=pings`);
    ws.ws.send('ping');
    await ws.next('ws.pong');
    for (const junk of ['{', 'null', '[]', '{"type":"other"}']) ws.ws.send(junk);
    ws.ws.send(JSON.stringify({ type: 'ws.ping' }));
    await ws.next('ws.pong');
    expect(ws.frames.map((frame) => frame.type)).toEqual(['ws.hello', 'ws.pong', 'ws.pong']);
    await ws.close();
  });

  it('should refuse bad upgrades before upgrading: 400, 403 for a foreign origin, 404 elsewhere', async () => {
    expect(await upgradeStatus(`${t.wsBase}/ws`)).toBe(400);
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=has%20space`)).toBe(400);
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=ok&since_seq=abc`)).toBe(400);
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=ok&conv_id=other`)).toBe(400);
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=ok`, { origin: 'http://evil.example' })).toBe(403);
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=ok`, { origin: 'http://dashboard.example' })).toBe(101);
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=ok`, { origin: t.base })).toBe(101);
    expect(await upgradeStatus(`${t.wsBase}/elsewhere?conv_id=ok`)).toBe(404);
  });
});
