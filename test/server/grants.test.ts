import { z } from 'zod';
import { argsDigest } from '../../src/core/args-digest.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createTestTools, get, post, request, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

/** Per conversation: echo, echo again, danger (never grantable), echo once more, then an answer. */
const script = {
  responses: [
    { tool_calls: [{ id: 'e1', name: 'echo', arguments: { text: 'one' } }] },
    { tool_calls: [{ id: 'e2', name: 'echo', arguments: { text: 'two' } }] },
    { tool_calls: [{ id: 'd1', name: 'danger', arguments: {} }] },
    { tool_calls: [{ id: 'e3', name: 'echo', arguments: { text: 'three' } }] },
    { text: 'done' },
  ],
};

const danger = defineTool({ name: 'danger', description: 'Always asks.', parameters: z.object({}), grantable: false, execute: () => 'done' });

let n = 0;
const nextConv = () => `grant-${++n}`;

/** A conversation in step mode (after_inference only) with a client joined; resolves at its first pause. */
async function started(t: TestServer, conv: string): Promise<{ ws: SemClient; first: any }> {
  const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${conv}`);
  expect((await post(t.base, '/debug/step/enable', { conv_id: conv, phases: ['after_inference'] })).status).toBe(200);
  expect((await post(t.base, '/chat', { prompt: 'go', conv_id: conv })).status).toBe(200);
  return { ws, first: await ws.next('debugger.pause') };
}

describe('grants over the wire (docs/protocol.md, Grants)', () => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer({ debug: true, script, runtime: { tools: [...createTestTools(), danger], pauseTimeoutMs: 10_000 } });
  });
  afterEach(() => t.close());

  it('should let later calls of a remembered tool run without a pause, announced and audited as by the grant', async () => {
    const conv = nextConv();
    const { ws, first } = await started(t, conv);
    const reply = await post(t.base, '/debug/continue', { pause_id: first.pause_id, remember: { scope: 'conversation', tools: ['echo'] } });
    expect(reply.status).toBe(200);
    const grant = reply.body.grant;
    expect(grant).toEqual({ grant_id: expect.any(String), scope: 'conversation', tools: ['echo'], conv_id: conv, by: 'local', created_at: expect.any(Number) });
    expect(await ws.next('debugger.granted')).toMatchObject({ grant_id: grant.grant_id, tool_call_id: 'e2', name: 'echo' });
    // danger is never grantable: it asks, and remembering it is refused, changing nothing.
    const asked = await ws.next('debugger.pause');
    expect(asked.extra.pending_tools).toEqual(['danger']);
    const refused = await post(t.base, '/debug/continue', { pause_id: asked.pause_id, remember: { scope: 'server', tools: ['danger'] } });
    expect(refused).toMatchObject({ status: 400, body: { error: { code: 'invalid_request', details: { fields: [{ field: 'remember.tools' }] } } } });
    expect((await post(t.base, '/debug/continue', { pause_id: asked.pause_id })).status).toBe(200);
    expect(await ws.next('debugger.granted')).toMatchObject({ grant_id: grant.grant_id, tool_call_id: 'e3' });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });

    const { decisions } = (await get(t.base, `/conversations/${conv}/decisions`)).body;
    expect(decisions.map((row: any) => [row.by, row.reason, row.tool_call_ids ?? null, row.grant_id ?? null])).toEqual([
      ['local', 'continued', null, null],
      ['grant', 'granted', ['e2'], grant.grant_id],
      ['local', 'continued', null, null],
      ['grant', 'granted', ['e3'], grant.grant_id],
    ]);
    expect(decisions[1].args_digests).toEqual({ e2: argsDigest({ text: 'two' }) });
    expect((await get(t.base, '/grants')).body).toEqual({ grants: [grant] });
    // Another conversation is outside a conversation grant: it pauses.
    const other = await started(t, nextConv());
    expect(other.first.extra.pending_tools).toEqual(['echo']);
    await Promise.all([ws.close(), other.ws.close()]);
  });

  it('should stop applying a revoked grant at the next call, and answer 404 for it then', async () => {
    const conv = nextConv();
    const { ws, first } = await started(t, conv);
    const { grant } = (await post(t.base, '/debug/continue', { pause_id: first.pause_id, action: 'edit', edits: { e1: { text: 'uno' } }, remember: { scope: 'server', tools: ['echo'] } })).body;
    expect(grant).toMatchObject({ scope: 'server', tools: ['echo'] });
    expect(grant.conv_id).toBeUndefined();
    await ws.next('debugger.granted');
    const asked = await ws.next('debugger.pause');
    expect(await request(t.base, 'DELETE', `/grants/${grant.grant_id}`)).toMatchObject({ status: 200, body: { ok: true, grant_id: grant.grant_id } });
    expect((await get(t.base, '/grants')).body).toEqual({ grants: [] });
    expect((await request(t.base, 'DELETE', `/grants/${grant.grant_id}`)).status).toBe(404);
    expect((await post(t.base, '/debug/continue', { pause_id: asked.pause_id })).status).toBe(200);
    // e3 is echo again: the grant is gone, so it pauses.
    expect((await ws.next('debugger.pause')).extra.tool_calls).toEqual([{ id: 'e3', name: 'echo', input: { text: 'three' } }]);
    await ws.close();
  });

  it('should refuse a bad remember before deciding, and answer 405 to other methods', async () => {
    const { ws, first } = await started(t, nextConv());
    const bad = [
      { scope: 'galaxy', tools: ['echo'] },
      { scope: 'server', tools: [] },
      { scope: 'server', tools: ['echo'], ttl_ms: -1 },
      { scope: 'profile', tools: ['echo'] },
    ];
    for (const remember of bad) expect((await post(t.base, '/debug/continue', { pause_id: first.pause_id, remember })).status).toBe(400);
    const denied = await post(t.base, '/debug/continue', { pause_id: first.pause_id, action: 'deny', remember: { scope: 'server', tools: ['echo'] } });
    expect(denied).toMatchObject({ status: 400, body: { error: { code: 'invalid_action' } } });
    expect((await get(t.base, '/debug/pauses')).body.pauses).toHaveLength(1);
    expect((await post(t.base, '/grants', {})).status).toBe(405);
    expect((await get(t.base, '/grants/g1')).status).toBe(405);
    await ws.close();
  });
});

describe('grants with auth: owner rules as conversations', () => {
  let t: TestServer;
  afterEach(() => t.close());

  it("should list and revoke only the caller's grants, and never approve another user's calls", async () => {
    const tokens = new Map([['ta', 'alice'], ['tb', 'bob']]);
    t = await startTestServer({ debug: true, tokens, script, runtime: { tools: [...createTestTools(), danger], pauseTimeoutMs: 10_000 } });
    const pauseOf = async (token: string, conv: string) => {
      const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=${conv}&access_token=${token}`);
      await post(t.base, '/debug/step/enable', { conv_id: conv }, token);
      await post(t.base, '/chat', { prompt: 'go', conv_id: conv }, token);
      return { ws, pause: await ws.next('debugger.pause') };
    };
    const alice = await pauseOf('ta', 'alice-1');
    const { grant } = (await post(t.base, '/debug/continue', { pause_id: alice.pause.pause_id, remember: { scope: 'server', tools: ['echo'] } }, 'ta')).body;
    expect(grant.by).toBe('alice');
    const bob = await pauseOf('tb', 'bob-1');
    expect(bob.pause.extra.pending_tools).toEqual(['echo']);
    expect((await get(t.base, '/grants', 'tb')).body).toEqual({ grants: [] });
    expect((await request(t.base, 'DELETE', `/grants/${grant.grant_id}`, undefined, 'tb')).status).toBe(403);
    expect((await get(t.base, '/grants')).status).toBe(401);
    expect((await get(t.base, '/grants', 'ta')).body.grants).toEqual([grant]);
    await Promise.all([alice.ws.close(), bob.ws.close()]);
  });
});
