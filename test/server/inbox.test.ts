import { parseTokens } from '../../src/server/auth.js';
import type { Profile } from '../../src/server/profiles.js';
import { get, post, request, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient, upgradeStatus } from '../helpers/server-ws-client.js';

const ALICE = 'token-alice';
const BOB = 'token-bob';

describe('the inbox: GET /pauses and GET /ws/pauses', () => {
  let t: TestServer;
  beforeAll(async () => {
    const profiles: Profile[] = [{ slug: 'ops' }];
    t = await startTestServer({ debug: true, tokens: parseTokens(`alice:${ALICE},bob:${BOB}`), profiles, runtime: { pauseTimeoutMs: 20_000 } });
  });
  afterAll(() => t.close());

  /** Starts a stepped run of `conv` for `token` and resolves with its first pause, as its own socket saw it. */
  async function pauseIn(conv: string, token: string, path = '/chat'): Promise<string> {
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${conv}&access_token=${token}`);
    expect((await post(t.base, path, { prompt: 'x', conv_id: conv, overrides: { step_mode: true } }, token)).status).toBe(200);
    const pause = await ws.next('debugger.pause');
    await ws.close();
    return pause.pause_id as string;
  }

  it('should list the caller\'s pauses across conversations, soonest deadline first, and filter them', async () => {
    const first = await pauseIn('inbox-a1', ALICE);
    const second = await pauseIn('inbox-a2', ALICE, '/chat/ops');
    const bobs = await pauseIn('inbox-b1', BOB);
    const mine = await get(t.base, '/pauses', ALICE);
    expect(mine.status).toBe(200);
    expect(mine.body.pauses.map((pause: { pause_id: string }) => pause.pause_id)).toEqual([first, second]);
    expect(mine.body.pauses[0]).toMatchObject({ conv_id: 'inbox-a1', phase: 'after_inference', tool_calls: [{ name: 'add' }] });
    expect((await get(t.base, '/pauses', BOB)).body.pauses.map((pause: { pause_id: string }) => pause.pause_id)).toEqual([bobs]);
    expect((await get(t.base, '/pauses?conv_id=inbox-a2', ALICE)).body.pauses).toHaveLength(1);
    expect((await get(t.base, '/pauses?profile=ops', ALICE)).body.pauses.map((pause: { pause_id: string }) => pause.pause_id)).toEqual([second]);
    expect((await get(t.base, '/pauses?tool=add', ALICE)).body.pauses).toHaveLength(2);
    expect((await get(t.base, '/pauses?tool=echo', ALICE)).body.pauses).toEqual([]);
    // `limit`: the soonest that many, after the filters.
    expect((await get(t.base, '/pauses?limit=1', ALICE)).body.pauses.map((pause: { pause_id: string }) => pause.pause_id)).toEqual([first]);
    expect((await get(t.base, '/pauses?limit=1&profile=ops', ALICE)).body.pauses.map((pause: { pause_id: string }) => pause.pause_id)).toEqual([second]);
    for (const bad of ['0', '-1', 'x', '10001']) expect((await get(t.base, `/pauses?limit=${bad}`, ALICE)).status).toBe(400);
    // Owner rules as /debug/pauses: a foreign conversation is 403, an unknown one 404, no token 401.
    expect((await get(t.base, '/pauses?conv_id=inbox-b1', ALICE)).status).toBe(403);
    expect((await get(t.base, '/pauses?conv_id=nobody', ALICE)).status).toBe(404);
    expect((await get(t.base, '/pauses?conv_id=bad%20id', ALICE)).status).toBe(400);
    expect((await get(t.base, '/pauses')).status).toBe(401);
    expect((await request(t.base, 'POST', '/pauses', {}, ALICE)).status).toBe(405);
    for (const pauseId of [first, second]) expect((await post(t.base, '/debug/continue', { pause_id: pauseId }, ALICE)).status).toBe(200);
    expect((await post(t.base, '/debug/continue', { pause_id: bobs }, BOB)).status).toBe(200);
  });

  it('should stream the pauses and resumes of every conversation the caller may access, and no other', async () => {
    const alice = await SemClient.connect(`${t.wsBase}/ws/pauses?access_token=${ALICE}`);
    const bob = await SemClient.connect(`${t.wsBase}/ws/pauses?access_token=${BOB}`);
    expect(alice.hello).toMatchObject({ type: 'ws.hello', pending_pauses: expect.any(Array) });
    const pauseId = await pauseIn('inbox-live', ALICE);
    const pause = await alice.next('debugger.pause');
    expect(pause).toMatchObject({ pause_id: pauseId, phase: 'after_inference', seq: expect.any(Number), metadata: { conversation_id: 'inbox-live' } });
    expect((await post(t.base, '/debug/continue', { pause_id: pauseId, action: 'deny', reason: 'no' }, ALICE)).status).toBe(200);
    expect(await alice.next('debugger.resume')).toMatchObject({ pause_id: pauseId, reason: 'denied', by: 'alice' });
    // A late joiner is told of what is still pending in its hello.
    const after = await alice.next('debugger.pause');
    const late = await SemClient.connect(`${t.wsBase}/ws/pauses?access_token=${ALICE}`);
    expect(late.hello.pending_pauses.map((listed: { pause_id: string }) => listed.pause_id)).toContain(after.pause_id);
    expect((await post(t.base, '/debug/continue', { pause_id: after.pause_id }, ALICE)).status).toBe(200);
    await alice.next('debugger.resume');
    await late.next('debugger.resume');
    await bob.ping();
    expect(bob.frames.filter((frame) => frame.type.startsWith('debugger.'))).toEqual([]);
    await Promise.all([alice.close(), bob.close(), late.close()]);
  });

  it('should list only the soonest `limit` pending pauses in the hello of ?limit=, and say it cut the list', async () => {
    const pauseIds = [await pauseIn('inbox-l1', ALICE), await pauseIn('inbox-l2', ALICE), await pauseIn('inbox-l3', ALICE)];
    const all = (await get(t.base, '/pauses', ALICE)).body.pauses.map((pause: { pause_id: string }) => pause.pause_id) as string[];
    expect(all).toEqual(expect.arrayContaining(pauseIds));
    const cut = await SemClient.connect(`${t.wsBase}/ws/pauses?access_token=${ALICE}&limit=${all.length - 1}`);
    expect(cut.hello.pending_pauses.map((pause: { pause_id: string }) => pause.pause_id)).toEqual(all.slice(0, -1));
    expect(cut.hello.truncated).toBe(true);
    const whole = await SemClient.connect(`${t.wsBase}/ws/pauses?access_token=${ALICE}&limit=${all.length}`);
    expect(whole.hello.pending_pauses.map((pause: { pause_id: string }) => pause.pause_id)).toEqual(all);
    expect(whole.hello).not.toHaveProperty('truncated');
    // The live frames are every pause's, listed or not.
    expect((await post(t.base, '/debug/continue', { pause_id: pauseIds[2] }, ALICE)).status).toBe(200);
    expect(await cut.next('debugger.resume')).toMatchObject({ pause_id: pauseIds[2] });
    expect(all.indexOf(pauseIds[2] as string)).toBe(all.length - 1);
    for (const bad of ['0', '-1', 'x', '10001', '1.5', '']) expect(await upgradeStatus(`${t.wsBase}/ws/pauses?access_token=${ALICE}&limit=${bad}`)).toBe(400);
    for (const pauseId of pauseIds.slice(0, 2)) expect((await post(t.base, '/debug/continue', { pause_id: pauseId }, ALICE)).status).toBe(200);
    await Promise.all([cut.close(), whole.close()]);
  });

  it('should refuse the socket without a token or from a foreign origin, and answer plain GET with 426', async () => {
    expect(await upgradeStatus(`${t.wsBase}/ws/pauses`)).toBe(401);
    expect(await upgradeStatus(`${t.wsBase}/ws/pauses?access_token=${ALICE}`, { origin: 'http://evil.example' })).toBe(403);
    expect((await get(t.base, '/ws/pauses', ALICE)).status).toBe(426);
  });
});
