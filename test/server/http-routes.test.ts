import { get, post, request, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

describe('HTTP routes (debug on)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, runtime: { pauseTimeoutMs: 5000 } });
  });
  afterAll(() => t.close());

  it('should answer /healthz and serve the dashboard at /', async () => {
    expect(await get(t.base, '/healthz')).toMatchObject({ status: 200, body: { ok: true } });
    const page = await get(t.base, '/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
  });

  it('should start a run, creating a conversation when conv_id is missing', async () => {
    const reply = await post(t.base, '/chat', { prompt: 'add' });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      conv_id: expect.any(String),
      session_id: expect.any(String),
      turn_id: expect.any(String),
      inference_id: expect.any(String),
    });
    expect(reply.headers.get('content-type')).toMatch(/application\/json/);
  });

  it('should answer 409 run_in_progress with conv_id and session_id', async () => {
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=busy`);
    const first = await post(t.base, '/chat', { prompt: 'x', conv_id: 'busy', overrides: { step_mode: true } });
    await ws.next('debugger.pause');
    const second = await post(t.base, '/chat', { prompt: 'y', conv_id: 'busy' });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ conv_id: 'busy', session_id: first.body.session_id, error: { code: 'run_in_progress' } });
    await post(t.base, '/chat/cancel', { conv_id: 'busy' });
    await ws.next('run.end');
    await ws.close();
  });

  it('should refuse invalid bodies with 400 naming the fields', async () => {
    const missing = await post(t.base, '/chat', { conv_id: 'ok' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('invalid_request');
    expect(missing.body.error.details.fields.map((f: { field: string }) => f.field)).toContain('prompt');
    const badConv = await post(t.base, '/chat', { prompt: 'x', conv_id: 'no spaces allowed' });
    expect(badConv.status).toBe(400);
    expect(badConv.body.error.details.fields[0].field).toBe('conv_id');
    const tooLong = await post(t.base, '/chat', { prompt: 'x', conv_id: 'a'.repeat(129) });
    expect(tooLong.status).toBe(400);
    const badOverride = await post(t.base, '/chat', { prompt: 'x', overrides: { max_iterations: -1 } });
    expect(badOverride.body.error.details.fields[0].field).toBe('overrides.max_iterations');
  });

  it('should refuse unknown tool names with 400 and create nothing', async () => {
    const reply = await post(t.base, '/chat', { prompt: 'x', conv_id: 'tools-x', overrides: { tools: ['add', 'nope'] } });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toContain('nope');
    expect((await get(t.base, '/conversations/tools-x')).status).toBe(404);
  });

  it('should answer malformed JSON with 400 and a body over 1 MiB with 413', async () => {
    const malformed = await request(t.base, 'POST', '/chat', '{"prompt": ');
    expect(malformed).toMatchObject({ status: 400, body: { error: { code: 'invalid_json' } } });
    const huge = await post(t.base, '/chat', { prompt: 'x'.repeat(1024 * 1024 + 10) });
    expect(huge).toMatchObject({ status: 413, body: { error: { code: 'payload_too_large' } } });
  });

  it('should answer unknown routes with 404 JSON and wrong methods with 405 JSON', async () => {
    expect(await get(t.base, '/nope')).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    const wrong = await request(t.base, 'DELETE', '/chat');
    expect(wrong).toMatchObject({ status: 405, body: { error: { code: 'method_not_allowed' } } });
    expect(wrong.headers.get('allow')).toBe('POST');
    expect((await post(t.base, '/conversations', {})).status).toBe(405);
    expect((await get(t.base, '/debug/continue')).status).toBe(405);
    expect((await post(t.base, '/healthz', {})).status).toBe(405);
    expect((await post(t.base, '/grants', {})).status).toBe(405);
    const grant = await get(t.base, '/grants/g1');
    expect(grant).toMatchObject({ status: 405, body: { error: { code: 'method_not_allowed' } } });
    expect(grant.headers.get('allow')).toBe('DELETE');
  });

  it('should list only the newest `limit` conversations with ?limit=, oldest first, and say it cut the list', async () => {
    for (const convId of ['list-a', 'list-b', 'list-c']) await (await SemClient.connect(`${t.wsBase}/ws?conv_id=${convId}`)).close();
    const all = (await get(t.base, '/conversations')).body;
    expect(all).not.toHaveProperty('truncated');
    const ids = all.conversations.map((conversation: { conv_id: string }) => conversation.conv_id) as string[];
    expect(ids.slice(-3)).toEqual(['list-a', 'list-b', 'list-c']);
    const cut = (await get(t.base, '/conversations?limit=2')).body;
    expect(cut).toEqual({ conversations: [expect.objectContaining({ conv_id: 'list-b' }), expect.objectContaining({ conv_id: 'list-c' })], truncated: true });
    expect((await get(t.base, `/conversations?limit=${ids.length}`)).body).toEqual(all);
    for (const bad of ['0', '-1', 'x', '10001', '1.5']) expect(await get(t.base, `/conversations?limit=${bad}`)).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
  });

  it('should cancel: 404 for an unknown conversation, cancelled false when idle', async () => {
    expect(await post(t.base, '/chat/cancel', { conv_id: 'never-seen' })).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect((await post(t.base, '/chat/cancel', {})).status).toBe(400);
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=idle`);
    expect(await post(t.base, '/chat/cancel', { conv_id: 'idle' })).toMatchObject({ status: 200, body: { ok: true, cancelled: false } });
    await ws.close();
  });

  it('should list conversations and show one with its turns and pending pauses', async () => {
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=shown`);
    const started = await post(t.base, '/chat', { prompt: 'hello', conv_id: 'shown', overrides: { step_mode: true } });
    const pause = await ws.next('debugger.pause');
    const list = await get(t.base, '/conversations');
    expect(list.body.conversations).toContainEqual({
      conv_id: 'shown',
      session_id: started.body.session_id,
      running: true,
      step_mode: true,
      created_at: expect.any(Number),
      profile: null,
    });
    const one = await get(t.base, '/conversations/shown');
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ conv_id: 'shown', session_id: started.body.session_id, running: true, step_mode: true, profile: null });
    expect(one.body.turns[0].id).toBe(started.body.turn_id);
    expect(one.body.turns[0].blocks[0]).toMatchObject({ kind: 'user', payload: { text: 'hello' } });
    expect(one.body.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, conv_id: 'shown' })]);
    expect((await get(t.base, '/conversations/unknown-conv')).status).toBe(404);
    expect((await get(t.base, '/conversations/bad%20id')).status).toBe(400);
    await post(t.base, '/debug/step/disable', { conv_id: 'shown' });
    await ws.next('run.end');
    await ws.close();
  });

  it('should hydrate: 400 without conv_id, 404 for an unknown one, frames after since_seq', async () => {
    expect((await get(t.base, '/hydrate')).status).toBe(400);
    expect((await get(t.base, '/hydrate?conv_id=x&since_seq=-1')).status).toBe(400);
    expect((await get(t.base, '/hydrate?conv_id=nobody-here')).status).toBe(404);
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=hyd`);
    await post(t.base, '/chat', { prompt: 'x', conv_id: 'hyd' });
    await ws.next('run.end');
    const all = await get(t.base, '/hydrate?conv_id=hyd');
    expect(all.body.session_id).toBe(ws.hello.session_id);
    expect(all.body.last_seq).toBe(ws.sequenced.length);
    const some = await get(t.base, '/hydrate?conv_id=hyd&since_seq=3&limit=2');
    expect(some.body.frames.map((f: { event: { seq: number } }) => f.event.seq)).toEqual([4, 5]);
    expect(some.body.frames[0]).toEqual({ sem: true, event: ws.sequenced[3] });
    await ws.close();
  });

  it('should answer the debug routes: 404 unknown pause, 400 invalid action, pauses list', async () => {
    expect(await post(t.base, '/debug/continue', { pause_id: 'pause_nope' })).toMatchObject({ status: 404, body: { error: { code: 'unknown_pause' } } });
    expect((await post(t.base, '/debug/continue', {})).status).toBe(400);
    expect((await post(t.base, '/debug/continue', { pause_id: 'p', action: 'explode' })).status).toBe(400);
    expect((await post(t.base, '/debug/step/enable', {})).status).toBe(400);
    expect((await post(t.base, '/debug/step/enable', { conv_id: 'missing-conv' })).status).toBe(404);
    expect((await post(t.base, '/debug/step/enable', { session_id: 'sess_missing' })).status).toBe(404);
    expect(await get(t.base, '/debug/pauses')).toMatchObject({ status: 200, body: { pauses: expect.any(Array) } });
    expect((await get(t.base, '/debug/pauses?conv_id=missing-conv')).status).toBe(404);
  });

  it('should enable and disable step mode by conv_id or session_id', async () => {
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=toggle`);
    const enabled = await post(t.base, '/debug/step/enable', { conv_id: 'toggle' });
    expect(enabled.body).toEqual({ ok: true, session_id: ws.hello.session_id, conv_id: 'toggle' });
    expect((await get(t.base, '/conversations/toggle')).body.step_mode).toBe(true);
    const disabled = await post(t.base, '/debug/step/disable', { session_id: ws.hello.session_id });
    expect(disabled.body).toEqual({ ok: true, session_id: ws.hello.session_id, released: 0 });
    await ws.close();
  });

  it('should answer GET /ws without an upgrade with 426', async () => {
    expect((await get(t.base, '/ws?conv_id=x')).status).toBe(426);
  });
});

describe('HTTP routes (debug off)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: false });
  });
  afterAll(() => t.close());

  it('should answer every /debug route with 404', async () => {
    expect((await post(t.base, '/debug/step/enable', { conv_id: 'a' })).status).toBe(404);
    expect((await post(t.base, '/debug/step/disable', { conv_id: 'a' })).status).toBe(404);
    expect((await post(t.base, '/debug/continue', { pause_id: 'p' })).status).toBe(404);
    expect((await get(t.base, '/debug/pauses')).status).toBe(404);
    expect((await get(t.base, '/debug/pauses')).body.error.code).toBe('not_found');
  });

  it('should refuse step_mode with 403 debug_disabled and still run without it', async () => {
    const refused = await post(t.base, '/chat', { prompt: 'x', conv_id: 'nodebug', overrides: { step_mode: true } });
    expect(refused).toMatchObject({ status: 403, body: { error: { code: 'debug_disabled' } } });
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=nodebug`);
    expect((await post(t.base, '/chat', { prompt: 'x', conv_id: 'nodebug' })).status).toBe(200);
    expect((await ws.next('run.end')).status).toBe('completed');
    expect(ws.frames.some((frame) => frame.type === 'debugger.pause')).toBe(false);
    await ws.close();
  });
});
