import { createScriptedEngine } from '../../src/engines/scripted.js';
import type { Engine, InferenceRequest } from '../../src/core/engine.js';
import { createServer } from '../../src/server/app.js';
import { parseTokens } from '../../src/server/auth.js';
import type { Profile } from '../../src/server/profiles.js';
import { createTestTools, get, post, request, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

/** The support profile's own engine: it answers from its script and records what it was sent. */
function createSupportEngine() {
  const requests: InferenceRequest[] = [];
  const inner = createScriptedEngine({ responses: [{ text: 'Support here.' }, { text: 'Still support.' }] });
  const engine: Engine = { ...inner, name: 'support-engine', infer: (r) => (requests.push(r), inner.infer(r)) };
  return { engine, requests };
}

const systemOf = (r: InferenceRequest): string | undefined => (r.blocks[0]?.kind === 'system' ? r.blocks[0].payload.text : undefined);

function profiles(engine: Engine): Profile[] {
  return [
    { slug: 'support', description: 'Customer support', system_prompt: 'You are support.', tools: ['echo'], engine, allow_overrides: false },
    { slug: 'math', description: 'Sums only', tools: ['add'], max_iterations: 1, allow_overrides: ['system_prompt', 'tools'] },
    { slug: 'open' },
  ];
}

describe('profiles (docs/protocol.md, Profiles file)', () => {
  let t: TestServer;
  let support: ReturnType<typeof createSupportEngine>;
  beforeAll(async () => {
    support = createSupportEngine();
    t = await startTestServer({ debug: true, profiles: profiles(support.engine) });
  });
  afterAll(() => t.close());

  /** A conversation watched over the WebSocket from before its first chat. */
  const watch = (convId: string): Promise<SemClient> => SemClient.connect(`${t.wsBase}/ws?conv_id=${convId}`);

  it('should list the profiles with their tools (every tool when a profile names none)', async () => {
    expect(await get(t.base, '/profiles')).toMatchObject({
      status: 200,
      body: {
        profiles: [
          { slug: 'support', description: 'Customer support', tools: ['echo'] },
          { slug: 'math', description: 'Sums only', tools: ['add'] },
          { slug: 'open', description: '', tools: ['add', 'echo'] },
        ],
      },
    });
  });

  it("should run POST /chat/:profile with the profile's engine, system prompt and tools, and keep the profile for later chats", async () => {
    const ws = await watch('sup-1');
    const first = await post(t.base, '/chat/support', { prompt: 'help', conv_id: 'sup-1' });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ conv_id: 'sup-1', session_id: ws.hello.session_id, turn_id: expect.any(String), inference_id: expect.any(String) });
    expect(await ws.next('llm.final')).toMatchObject({ text: 'Support here.' });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    // A plain /chat on the conversation: still the support profile.
    expect((await post(t.base, '/chat', { prompt: 'more', conv_id: 'sup-1' })).status).toBe(200);
    expect(await ws.next('llm.final')).toMatchObject({ text: 'Still support.' });
    await ws.next('run.end');
    const mine = support.requests.filter((r) => r.conv_id === 'sup-1');
    expect(mine.map(systemOf)).toEqual(['You are support.', 'You are support.']);
    expect(mine.map((r) => r.tools.map((tool) => tool.name))).toEqual([['echo'], ['echo']]);
    expect((await get(t.base, '/conversations/sup-1')).body).toMatchObject({ conv_id: 'sup-1', profile: 'support' });
    const listed = (await get(t.base, '/conversations')).body.conversations;
    expect(listed).toContainEqual(expect.objectContaining({ conv_id: 'sup-1', profile: 'support' }));
    await ws.close();
  });

  it('should create a conversation with the profile when no conv_id is given', async () => {
    const reply = await post(t.base, '/chat/open', { prompt: 'hi' });
    expect(reply.status).toBe(200);
    expect((await get(t.base, `/conversations/${reply.body.conv_id}`)).body.profile).toBe('open');
  });

  it("should apply the profile's max_iterations and run on the server's engine when it has none", async () => {
    const ws = await watch('math-1');
    expect((await post(t.base, '/chat/math', { prompt: 'add', conv_id: 'math-1' })).status).toBe(200);
    // The server's script asks for `add` then answers; one iteration stops after the tool.
    expect(await ws.next('tool.result')).toMatchObject({ result: { sum: 2 } });
    expect(await ws.next('run.end')).toMatchObject({ status: 'max_iterations' });
    await ws.close();
  });

  it('should answer 404 unknown_profile and create nothing', async () => {
    const reply = await post(t.base, '/chat/nope', { prompt: 'x', conv_id: 'np-1' });
    expect(reply).toMatchObject({ status: 404, body: { error: { code: 'unknown_profile' } } });
    expect(reply.body.error.message).toContain('support, math, open');
    expect((await get(t.base, '/conversations/np-1')).status).toBe(404);
  });

  it('should answer 409 profile_mismatch for another profile, or for a conversation that ran without one', async () => {
    const ws = await watch('mix-1');
    await post(t.base, '/chat/support', { prompt: 'x', conv_id: 'mix-1' });
    await ws.next('run.end');
    const other = await post(t.base, '/chat/math', { prompt: 'y', conv_id: 'mix-1' });
    expect(other).toMatchObject({
      status: 409,
      body: { error: { code: 'profile_mismatch', details: { conv_id: 'mix-1', profile: 'support', requested: 'math' } } },
    });
    // The same profile again is fine.
    expect((await post(t.base, '/chat/support', { prompt: 'z', conv_id: 'mix-1' })).status).toBe(200);
    await ws.next('run.end');
    await ws.close();

    const plain = await watch('plain-1');
    await post(t.base, '/chat', { prompt: 'x', conv_id: 'plain-1' });
    await plain.next('run.end');
    const late = await post(t.base, '/chat/open', { prompt: 'y', conv_id: 'plain-1' });
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'profile_mismatch', details: { profile: null } } } });
    expect((await get(t.base, '/conversations/plain-1')).body.profile).toBeNull();
    await plain.close();
  });

  it('should answer 403 overrides_forbidden for overrides the profile forbids, also on a plain /chat of its conversation', async () => {
    const none = await post(t.base, '/chat/support', { prompt: 'x', conv_id: 'ov-1', overrides: { system_prompt: 'be rude' } });
    expect(none).toMatchObject({ status: 403, body: { error: { code: 'overrides_forbidden', details: { profile: 'support', overrides: ['system_prompt'] } } } });
    expect((await get(t.base, '/conversations/ov-1')).status).toBe(404);
    const listed = await post(t.base, '/chat/math', { prompt: 'x', conv_id: 'ov-2', overrides: { max_iterations: 5, system_prompt: 'ok' } });
    expect(listed).toMatchObject({ status: 403, body: { error: { code: 'overrides_forbidden', details: { overrides: ['max_iterations'] } } } });
    // A run may narrow the profile's tools, never widen them.
    const wider = await post(t.base, '/chat/math', { prompt: 'x', conv_id: 'ov-2', overrides: { tools: ['add', 'echo'] } });
    expect(wider).toMatchObject({ status: 403, body: { error: { code: 'overrides_forbidden', details: { tools: ['echo'] } } } });
    const unknown = await post(t.base, '/chat/math', { prompt: 'x', conv_id: 'ov-2', overrides: { tools: ['nope'] } });
    expect(unknown).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });

    const ws = await watch('ov-3');
    expect((await post(t.base, '/chat/support', { prompt: 'x', conv_id: 'ov-3', overrides: { step_mode: false } })).status).toBe(200);
    await ws.next('run.end');
    const plain = await post(t.base, '/chat', { prompt: 'y', conv_id: 'ov-3', overrides: { tools: ['echo'] } });
    expect(plain).toMatchObject({ status: 403, body: { error: { code: 'overrides_forbidden' } } });
    await ws.close();
  });

  it('should answer 405 for the wrong methods on the profile routes', async () => {
    const wrong = await get(t.base, '/chat/support');
    expect(wrong).toMatchObject({ status: 405, body: { error: { code: 'method_not_allowed' } } });
    expect(wrong.headers.get('allow')).toBe('POST');
    expect((await post(t.base, '/profiles', {})).status).toBe(405);
    // /chat/cancel keeps its meaning.
    expect((await post(t.base, '/chat/cancel', { conv_id: 'sup-1' })).body).toEqual({ ok: true, cancelled: false });
  });
});

describe('profiles: no profiles, auth, bad profiles', () => {
  it('should list none and refuse any profile when the server has none', async () => {
    const t = await startTestServer();
    try {
      expect(await get(t.base, '/profiles')).toMatchObject({ status: 200, body: { profiles: [] } });
      expect(await post(t.base, '/chat/support', { prompt: 'x' })).toMatchObject({ status: 404, body: { error: { code: 'unknown_profile' } } });
    } finally {
      await t.close();
    }
  });

  it('should need a token for /profiles and /chat/:profile when tokens are configured, and keep a profiled conversation its owner\'s', async () => {
    const t = await startTestServer({ tokens: parseTokens('alice:ta,bob:tb'), profiles: [{ slug: 'open' }] });
    try {
      expect((await get(t.base, '/profiles')).status).toBe(401);
      expect((await get(t.base, '/profiles', 'ta')).body).toEqual({ profiles: [{ slug: 'open', description: '', tools: ['add', 'echo'] }] });
      expect((await post(t.base, '/chat/open', { prompt: 'x' })).status).toBe(401);
      const mine = await post(t.base, '/chat/open', { prompt: 'x', conv_id: 'alice-1' }, 'ta');
      expect(mine.status).toBe(200);
      expect(await post(t.base, '/chat/open', { prompt: 'y', conv_id: 'alice-1' }, 'tb')).toMatchObject({ status: 403, body: { error: { code: 'forbidden' } } });
      expect((await request(t.base, 'GET', '/conversations', undefined, 'tb')).body.conversations).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it('should refuse unusable profiles when the server is built, naming the profile', () => {
    const build = (list: Profile[]) => () => createServer({ runtime: { engine: createScriptedEngine({ responses: [] }), tools: createTestTools() }, profiles: list });
    expect(build([{ slug: 'a', tools: ['nope'] }])).toThrow('profiles: "a" names unknown tools: nope');
    expect(build([{ slug: 'cancel' }])).toThrow(/not be "cancel"/);
    expect(build([{ slug: 'a' }, { slug: 'a' }])).toThrow('two profiles are named "a"');
    expect(build([{ slug: 'bad slug' }])).toThrow(/slug must match/);
    expect(build([{ slug: 'a', allow_overrides: ['prompt'] as never }])).toThrow(/allow_overrides/);
    expect(build([{ slug: 'a', allow_overrides: ['step_mode', 'tools'] }])).not.toThrow();
    expect(build([{ slug: 'a', max_iterations: 0 }])).toThrow(/max_iterations/);
  });
});
