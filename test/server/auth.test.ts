import { parseTokens } from '../../src/server/auth.js';
import { get, post, request, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient, upgradeStatus } from '../helpers/server-ws-client.js';

const ALICE = 'token-alice';
const BOB = 'token-bob';

describe('auth and ownership', () => {
  let t: TestServer;
  let pauseId: string;
  let alice: SemClient;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, tokens: parseTokens(`alice:${ALICE},bob:${BOB}`), runtime: { pauseTimeoutMs: 20_000 } });
    alice = await SemClient.connect(`${t.wsBase}/ws?conv_id=alices&access_token=${ALICE}`);
    expect((await post(t.base, '/chat', { prompt: 'x', conv_id: 'alices', overrides: { step_mode: true } }, ALICE)).status).toBe(200);
    pauseId = (await alice.next('debugger.pause')).pause_id;
  });
  afterAll(async () => {
    await alice.close();
    await t.close();
  });

  /** Every route that names alice's conversation or pause, as [method, path, body]. */
  const routes = (): [string, string, unknown?][] => [
    ['POST', '/chat', { prompt: 'x', conv_id: 'alices' }],
    ['POST', '/chat/cancel', { conv_id: 'alices' }],
    ['GET', '/conversations/alices'],
    ['GET', '/hydrate?conv_id=alices'],
    ['POST', '/debug/step/enable', { conv_id: 'alices' }],
    ['POST', '/debug/step/disable', { conv_id: 'alices' }],
    ['POST', '/debug/continue', { pause_id: pauseId }],
    ['GET', '/debug/pauses?conv_id=alices'],
  ];

  it('should answer 401 on every route without a token or with a wrong one', async () => {
    for (const [method, path, body] of [...routes(), ['GET', '/conversations'] as [string, string]]) {
      for (const token of [undefined, 'wrong-token']) {
        const reply = await request(t.base, method, path, body, token);
        expect([method, path, reply.status, reply.body.error?.code]).toEqual([method, path, 401, 'unauthorized']);
      }
    }
  });

  it("should answer 403 on every route naming another user's conversation or pause", async () => {
    for (const [method, path, body] of routes()) {
      const reply = await request(t.base, method, path, body, BOB);
      expect([method, path, reply.status, reply.body.error?.code]).toEqual([method, path, 403, 'forbidden']);
    }
    // Nothing was changed by the refused requests: the pause still waits for alice.
    expect((await get(t.base, '/debug/pauses?conv_id=alices', ALICE)).body.pauses).toHaveLength(1);
  });

  it('should need no token for /healthz and the dashboard', async () => {
    expect((await get(t.base, '/healthz')).status).toBe(200);
    expect((await get(t.base, '/')).status).toBe(200);
  });

  it("should list only the caller's conversations and pauses", async () => {
    expect((await get(t.base, '/conversations', ALICE)).body.conversations.map((c: { conv_id: string }) => c.conv_id)).toContain('alices');
    expect((await get(t.base, '/conversations', BOB)).body.conversations).toEqual([]);
    expect((await get(t.base, '/debug/pauses', BOB)).body.pauses).toEqual([]);
    expect((await get(t.base, '/debug/pauses', ALICE)).body.pauses).toHaveLength(1);
  });

  it('should check the WebSocket token (header or query) and ownership before upgrading', async () => {
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=alices`)).toBe(401);
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=alices&access_token=wrong`)).toBe(401);
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=alices&access_token=${BOB}`)).toBe(403);
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=alices`, { headers: { authorization: `Bearer ${BOB}` } })).toBe(403);
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=alices`, { headers: { authorization: `Bearer ${ALICE}` } })).toBe(101);
    expect(await upgradeStatus(`${t.wsBase}/ws?conv_id=bobs&access_token=${BOB}`)).toBe(101);
    expect((await get(t.base, '/conversations/bobs', ALICE)).status).toBe(403);
  });

  it('should let the owner continue, record who did, and keep refusing the other user after resolution', async () => {
    const reply = await post(t.base, '/debug/continue', { pause_id: pauseId }, ALICE);
    expect(reply.status).toBe(200);
    expect(await alice.next('debugger.resume')).toMatchObject({ pause_id: pauseId, reason: 'continued', by: 'alice' });
    expect((await post(t.base, '/debug/continue', { pause_id: pauseId }, BOB)).status).toBe(403);
    expect((await post(t.base, '/debug/continue', { pause_id: pauseId }, ALICE)).status).toBe(409);
    expect((await post(t.base, '/debug/continue', { pause_id: pauseId, conv_id: 'bobs' }, ALICE)).status).toBe(403);
  });
});

describe('parseTokens', () => {
  it('should read pairs separated by commas or lines, with comments', () => {
    expect([...parseTokens('alice:a1, bob:b2\n# note\ncarol:c3 # trailing\n')]).toEqual([
      ['a1', 'alice'],
      ['b2', 'bob'],
      ['c3', 'carol'],
    ]);
  });

  it('should refuse malformed pairs and a token listed twice', () => {
    expect(() => parseTokens('alice')).toThrow(/user:token/);
    expect(() => parseTokens(':x')).toThrow(/user:token/);
    expect(() => parseTokens('a:t,b:t')).toThrow(/twice/);
  });
});
