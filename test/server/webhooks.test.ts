import { createLinkSigner, linkKeyOf } from '../../src/server/webhooks/signing.js';
import type { WebhooksConfig } from '../../src/server/webhooks/webhooks-config.js';
import { get, post, request, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const SECRET = 'receiver-secret-0123456789';

/** The link's path on this server (`/a/<token>`), and its token. */
const pathOf = (link: string): string => new URL(link).pathname;

describe('webhooks and signed links', () => {
  let receiver: WebhookReceiver;
  let t: TestServer;
  let config: WebhooksConfig;
  let logged: string[];
  beforeAll(async () => {
    receiver = await startReceiver(SECRET);
    config = { webhooks: [{ url: receiver.url, secret: SECRET, events: ['pause', 'resume'] }] };
    logged = [];
    t = await startTestServer({ debug: true, webhooks: config, onWebhookFailure: (line) => logged.push(line), runtime: { pauseTimeoutMs: 20_000 } });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it('should POST each pause signed, with links that answer it once, by "link", and refuse forged, expired and cross-pause ones', async () => {
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=hooked`);
    expect((await post(t.base, '/chat', { prompt: 'x', conv_id: 'hooked', overrides: { step_mode: true } })).status).toBe(200);
    const pause = await ws.next('debugger.pause');
    const event = await receiver.next((item) => item.body.type === 'pause' && item.body.pause.pause_id === pause.pause_id);
    expect(event.verified).toBe(true);
    expect(Number(event.timestamp)).toBeGreaterThan(Date.now() - 10_000);
    expect(event.body).toEqual({
      type: 'pause',
      conv_id: 'hooked',
      pause: expect.objectContaining({ pause_id: pause.pause_id, phase: 'after_inference', deadline_ms: pause.deadline_ms, conv_id: 'hooked' }),
      links: { continue: expect.stringMatching(new RegExp(`^${t.base}/a/`)), deny: expect.stringMatching(new RegExp(`^${t.base}/a/`)) },
    });
    const { links } = event.body;

    // The page shows the pause and a one-click form; a GET decides nothing.
    const page = await fetch(links.continue, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await page.text();
    expect(html).toContain(pause.summary);
    expect(html).toContain('<form method="post">');
    expect((await get(t.base, pathOf(links.continue))).body).toMatchObject({ action: 'continue', pause: { pause_id: pause.pause_id } });

    const signer = createLinkSigner(linkKeyOf(config));
    const [claims, mac] = pathOf(links.continue).slice(3).split('.') as [string, string];
    const forged = `${claims}.${mac.slice(0, -2)}${mac.endsWith('AA') ? 'BB' : 'AA'}`;
    const otherKey = createLinkSigner(linkKeyOf({ webhooks: [{ url: receiver.url, secret: 'another-secret-0123456789' }] }));
    const expired = signer.sign({ pause_id: pause.pause_id, conv_id: 'hooked', action: 'continue', deadline_ms: Date.now() - 1 });
    const refusals: [string, unknown, number, string][] = [
      [forged, {}, 401, 'invalid_link'],
      ['not-a-token', {}, 401, 'invalid_link'],
      [otherKey.sign({ pause_id: pause.pause_id, conv_id: 'hooked', action: 'continue', deadline_ms: pause.deadline_ms }), {}, 401, 'invalid_link'],
      [expired, {}, 403, 'link_expired'],
      [pathOf(links.continue).slice(3), { pause_id: 'pause_other' }, 403, 'link_mismatch'],
      [pathOf(links.continue).slice(3), { action: 'deny' }, 403, 'link_mismatch'],
    ];
    for (const [token, body, status, code] of refusals) {
      const reply = await post(t.base, `/a/${token}`, body);
      expect([token, reply.status, reply.body.error?.code]).toEqual([token, status, code]);
    }
    // Each refusal changed nothing: the pause still waits, nothing was decided.
    expect((await get(t.base, '/pauses')).body.pauses.map((listed: { pause_id: string }) => listed.pause_id)).toEqual([pause.pause_id]);
    expect((await get(t.base, '/conversations/hooked/decisions')).body.decisions).toEqual([]);

    const used = await post(t.base, pathOf(links.continue), {});
    expect(used).toMatchObject({ status: 200, body: { ok: true, pause: { pause_id: pause.pause_id } } });
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'continued', by: 'link' });
    const resumed = await receiver.next((item) => item.body.type === 'resume' && item.body.pause.pause_id === pause.pause_id);
    expect(resumed.verified).toBe(true);
    expect(resumed.body).toEqual({ type: 'resume', conv_id: 'hooked', pause: { pause_id: pause.pause_id, reason: 'continued', by: 'link' } });
    // Reused, or the other action's link after the decision: 409, as any second decision.
    expect(await post(t.base, pathOf(links.continue), {})).toMatchObject({ status: 409, body: { error: { code: 'pause_resolved' } } });
    expect(await post(t.base, pathOf(links.deny), {})).toMatchObject({ status: 409, body: { error: { code: 'pause_resolved' } } });
    expect((await fetch(links.continue, { headers: { accept: 'text/html' } })).status).toBe(409);
    expect((await get(t.base, '/conversations/hooked/decisions')).body.decisions).toEqual([expect.objectContaining({ pause_id: pause.pause_id, reason: 'continued', by: 'link' })]);
    expect((await request(t.base, 'PUT', pathOf(links.continue), {})).status).toBe(405);
    // One POST per event per webhook, and no secret anywhere it could leak.
    expect(receiver.received.filter((item) => item.body.pause.pause_id === pause.pause_id).map((item) => item.body.type)).toEqual(['pause', 'resume']);
    expect(JSON.stringify([ws.frames, logged, receiver.received.map((item) => item.body)])).not.toContain(SECRET);
    await post(t.base, '/debug/continue', { pause_id: (await ws.next('debugger.pause')).pause_id });
    await ws.next('run.end');
    await ws.close();
  });
});

describe('webhook delivery never delays a run', () => {
  it('should retry a receiver that answers 500 or hangs in the background while the run goes on', async () => {
    const failing = await startReceiver(SECRET, (attempt) => (attempt < 3 ? 'fail' : 'ok'));
    const hanging = await startReceiver(SECRET, 'hang');
    const logged: string[] = [];
    const t = await startTestServer({
      debug: true,
      webhooks: { webhooks: [{ url: failing.url, secret: SECRET }, { url: hanging.url, secret: SECRET }] },
      onWebhookFailure: (line) => logged.push(line),
      runtime: { pauseTimeoutMs: 20_000 },
    });
    const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=slowhooks`);
    expect((await post(t.base, '/chat', { prompt: 'x', conv_id: 'slowhooks', overrides: { step_mode: true } })).status).toBe(200);
    const pause = await ws.next('debugger.pause');
    await hanging.next(() => true);
    // The failing receiver gets the pause three times (two 500s, then a 204), each signed afresh.
    const tries = await Promise.all([0, 1, 2].map((index) => failing.next((item) => item.body.pause.pause_id === pause.pause_id, index)));
    expect(tries.every((item) => item.verified)).toBe(true);
    expect(new Set(tries.map((item) => item.timestamp)).size).toBe(3);
    // The hanging receiver still holds its request; the run is answered and goes to its next pause meanwhile.
    expect((await post(t.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const after = await ws.next('debugger.pause');
    expect((await post(t.base, '/debug/continue', { pause_id: after.pause_id })).status).toBe(200);
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    expect(logged.some((line) => line.includes('answered 500'))).toBe(true);
    expect(JSON.stringify(logged)).not.toContain(SECRET);
    await ws.close();
    await t.close();
    await Promise.all([failing.close(), hanging.close()]);
  });
});
