import { createScriptedEngine } from '../../src/engines/scripted.js';
import { createStepwise } from '../../src/sessions/runtime.js';
import { createStepwiseServer } from '../../src/server/stepwise-server.js';
import { createLinkSigner } from '../../src/server/webhooks/signing.js';
import type { WebhooksConfig } from '../../src/server/webhooks/webhooks-config.js';
import { get, post, request, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const SECRET = 'receiver-secret-0123456789';
const LINK_SECRET = 'link-secret-of-the-service-0123';

/** The same MAC spelled otherwise: the last character's unused low bits flipped (32 bytes leave two). */
function respelled(token: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const last = alphabet.indexOf(token.at(-1) as string);
  return `${token.slice(0, -1)}${alphabet[last ^ 1]}`;
}

/** The link's path on this server (`/a/<token>`), and its token. */
const pathOf = (link: string): string => new URL(link).pathname;

describe('webhooks and signed links', () => {
  let receiver: WebhookReceiver;
  let t: TestServer;
  let config: WebhooksConfig;
  let logged: string[];
  beforeAll(async () => {
    receiver = await startReceiver(SECRET);
    config = { webhooks: [{ url: receiver.url, secret: SECRET, events: ['pause', 'resume'] }], link_secret: LINK_SECRET };
    logged = [];
    t = await startTestServer({ debug: true, webhooks: config, onWebhookFailure: (line) => logged.push(line), runtime: { pauseTimeoutMs: 20_000 } });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it('should POST each pause signed, with links that answer it once, by "link", and refuse forged, re-spelled, expired and cross-pause ones', async () => {
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
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const html = await page.text();
    expect(html).toContain(pause.summary);
    expect(html).toContain('<form method="post">');
    expect((await get(t.base, pathOf(links.continue))).body).toMatchObject({ action: 'continue', pause: { pause_id: pause.pause_id } });

    const signer = createLinkSigner(LINK_SECRET);
    const token = pathOf(links.continue).slice(3);
    const [claims, mac] = token.split('.') as [string, string];
    const forged = `${claims}.${mac.slice(0, -2)}${mac.endsWith('AA') ? 'BB' : 'AA'}`;
    const claimsOfPause = { pause_id: pause.pause_id, conv_id: 'hooked', action: 'continue' as const, deadline_ms: pause.deadline_ms };
    // A receiver knows its webhook's secret: a link signed with it is no link of this service's.
    const byReceiver = createLinkSigner(SECRET).sign(claimsOfPause);
    const otherKey = createLinkSigner('another-link-secret-0123456789').sign(claimsOfPause);
    const expired = signer.sign({ ...claimsOfPause, deadline_ms: Date.now() - 1 });
    // Each decodes to the real token's bytes; only the spelling `sign` wrote is the token.
    expect(Buffer.from(respelled(token).split('.')[1] as string, 'base64url')).toEqual(Buffer.from(mac, 'base64url'));
    const respellings = [respelled(token), `${token}=`, `${claims}=.${mac}`, `${token}%3D`, `${claims}.${mac}%20`];
    const refusals: [string, unknown, number, string][] = [
      [forged, {}, 403, 'link_invalid'],
      ['not-a-token', {}, 403, 'link_invalid'],
      [byReceiver, {}, 403, 'link_invalid'],
      [otherKey, {}, 403, 'link_invalid'],
      ...respellings.map((text): [string, unknown, number, string] => [text, {}, 403, 'link_invalid']),
      [expired, {}, 403, 'link_expired'],
      [pathOf(links.continue).slice(3), { pause_id: 'pause_other' }, 403, 'link_mismatch'],
      [pathOf(links.continue).slice(3), { action: 'deny' }, 403, 'link_mismatch'],
    ];
    for (const [text, body, status, code] of refusals) {
      const reply = await post(t.base, `/a/${text}`, body);
      expect([text, reply.status, reply.body.error?.code]).toEqual([text, status, code]);
      if (status === 403 && code === 'link_invalid') expect((await get(t.base, `/a/${text}`)).status).toBe(403);
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
      webhooks: { webhooks: [{ url: failing.url, secret: SECRET }, { url: hanging.url, secret: SECRET }], link_secret: LINK_SECRET },
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

describe('the link secret of a library server', () => {
  it('should be required at construction when a webhook gets pauses, and differ from every webhook secret', () => {
    const stepwise = createStepwise({ engine: createScriptedEngine({ responses: [{ text: 'x' }] }) });
    try {
      const url = 'http://127.0.0.1:9/';
      expect(() => createStepwiseServer(stepwise, { webhooks: { webhooks: [{ url, secret: SECRET }] } })).toThrow('webhooks: link_secret: is required for signed links');
      expect(() => createStepwiseServer(stepwise, { webhooks: { webhooks: [{ url, secret: SECRET }], link_secret: SECRET } })).toThrow("link_secret: must differ from every webhook's secret");
      expect(() => createStepwiseServer(stepwise, { webhooks: { webhooks: [{ url, secret: SECRET }], link_secret: LINK_SECRET }, webhookMaxAttempts: 0 })).toThrow('webhookMaxAttempts');
      // Resume events carry no links: nothing to sign.
      void createStepwiseServer(stepwise, { webhooks: { webhooks: [{ url, secret: SECRET, events: ['resume'] }] } }).close();
    } finally {
      stepwise.dispose();
    }
  });
});

describe('webhook redirects and the most tries', () => {
  it('should count a 302 or a 307 as a failed try, never follow it, and stop after webhookMaxAttempts', async () => {
    const target = await startReceiver(SECRET);
    const [found, temporary] = await Promise.all([startReceiver(SECRET, { status: 302, location: target.url }), startReceiver(SECRET, { status: 307, location: target.url })]);
    const logged: string[] = [];
    const t = await startTestServer({
      debug: true,
      webhooks: { webhooks: [{ url: found.url, secret: SECRET }, { url: temporary.url, secret: SECRET }], link_secret: LINK_SECRET },
      webhookMaxAttempts: 3,
      onWebhookFailure: (line) => logged.push(line),
      runtime: { pauseTimeoutMs: 60_000 },
    });
    try {
      const ws = await SemClient.connect(`${t.wsBase}/ws?conv_id=redirected`);
      expect((await post(t.base, '/chat', { prompt: 'x', conv_id: 'redirected', overrides: { step_mode: true } })).status).toBe(200);
      const pause = await ws.next('debugger.pause');
      // The third try of each is the last: said once it failed, far before the pause's deadline.
      const gaveUp = (origin: string): Promise<void> => waitFor(() => logged.some((line) => line.startsWith(`webhook ${origin} answered`) && line.includes('not tried again (3 tries made)')));
      await Promise.all([gaveUp(new URL(found.url).origin), gaveUp(new URL(temporary.url).origin)]);
      for (const receiver of [found, temporary]) {
        expect(receiver.received.map((item) => [item.method, item.body.pause.pause_id, item.verified])).toEqual(Array(3).fill(['POST', pause.pause_id, true]));
      }
      expect(logged.filter((line) => line.includes('answered 302'))).toHaveLength(3);
      expect(logged.filter((line) => line.includes('answered 307'))).toHaveLength(3);
      // A followed redirect would have reached the target (a 307 with the signed body itself).
      expect(target.received).toEqual([]);
      await ws.close();
    } finally {
      await t.close();
      await Promise.all([target.close(), found.close(), temporary.close()]);
    }
  });
});

/** Resolves once `condition` holds, checked every few milliseconds (for logs, which have no event to wait on). */
async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
