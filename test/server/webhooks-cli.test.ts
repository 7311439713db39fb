import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { post } from '../helpers/server-harness.js';
import { ensureBuilt, runCli, startCli } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { startReceiver } from '../helpers/webhook-receiver.js';

const SECRET = 'cli-webhook-secret-0123456789';
const LINK_SECRET = 'cli-link-secret-0123456789';

/** `serve --webhooks FILE` and `--public-url` (docs/protocol.md, Webhooks and signed links). */
describe('serve --webhooks and --public-url', () => {
  let dir: string;
  beforeAll(() => {
    ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'stepwise-webhooks-'));
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('should refuse a bad webhooks file naming the field, never quoting a secret', () => {
    const cases: [unknown, RegExp][] = [
      [{ webhooks: [{ url: 'ftp://example.com', secret: SECRET }] }, /webhooks\.0\.url/],
      [{ webhooks: [{ url: 'http://127.0.0.1:9/', secret: 'short' }] }, /webhooks\.0\.secret/],
      [{ webhooks: [{ url: 'http://127.0.0.1:9/', secret: SECRET, events: ['explode'] }] }, /webhooks\.0\.events/],
      [`{"webhooks": [{"url": "http://x", "secret": "${SECRET}"`, /not valid JSON/],
    ];
    for (const [content, message] of cases) {
      const file = join(dir, 'bad.json');
      writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
      const { status, output } = runCli(['serve', '--store', 'memory', '--port', '0', '--webhooks', file]);
      expect(status).toBe(1);
      expect(output).toMatch(message);
      expect(output).not.toContain(SECRET);
    }
    expect(runCli(['serve', '--store', 'memory', '--public-url', 'agent.example.com']).output).toMatch(/--public-url must be an http/);
  });

  it('should refuse to start without link_secret when a webhook gets pauses (their links need it), and start without it for resumes only', async () => {
    const file = join(dir, 'no-link-secret.json');
    for (const webhook of [{ url: 'http://127.0.0.1:9/', secret: SECRET }, { url: 'http://127.0.0.1:9/', secret: SECRET, events: ['resume', 'pause'] }]) {
      writeFileSync(file, JSON.stringify({ webhooks: [{ url: 'http://127.0.0.1:9/', secret: SECRET, events: ['resume'] }, webhook] }));
      const { status, output } = runCli(['serve', '--store', 'memory', '--port', '0', '--webhooks', file]);
      expect(status).toBe(1);
      expect(output).toContain(`--webhooks ${file}: link_secret: is required for signed links`);
      expect(output).not.toContain(SECRET);
    }
    // A receiver knows its own secret: it must not be the one links are signed with.
    writeFileSync(file, JSON.stringify({ webhooks: [{ url: 'http://127.0.0.1:9/', secret: SECRET }], link_secret: SECRET }));
    const same = runCli(['serve', '--store', 'memory', '--port', '0', '--webhooks', file]);
    expect([same.status, same.output.includes("link_secret: must differ from every webhook's secret (webhooks.0.secret is the same)"), same.output.includes(SECRET)]).toEqual([1, true, false]);
    // Resume events carry no links: nothing to sign, so no link secret needed.
    writeFileSync(file, JSON.stringify({ webhooks: [{ url: 'http://127.0.0.1:9/', secret: SECRET, events: ['resume'] }] }));
    const server = await startCli(['--port', '0', '--store', 'memory', '--webhooks', file]);
    try {
      // No key, so no token is one of this service's.
      expect((await post(server.base, '/a/e30.AAAA', {})).body.error.code).toBe('link_invalid');
    } finally {
      await server.stop();
    }
  });

  it('should never follow a redirect and stop after --webhook-max-attempts tries', async () => {
    const target = await startReceiver(SECRET);
    const redirecting = await startReceiver(SECRET, { status: 302, location: target.url });
    const file = join(dir, 'redirect.json');
    writeFileSync(file, JSON.stringify({ webhooks: [{ url: redirecting.url, secret: SECRET }], link_secret: LINK_SECRET }));
    const server = await startCli(['--port', '0', '--debug', '--webhooks', file, '--webhook-max-attempts', '3', '--pause-timeout-ms', '60000']);
    try {
      const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=redirected`);
      expect((await post(server.base, '/chat', { prompt: 'x', conv_id: 'redirected', overrides: { step_mode: true } })).status).toBe(200);
      const pause = await ws.next('debugger.pause');
      // The log line of the third, last, try is the moment to count: a fourth would follow it, never precede it.
      await waitFor(() => server.stdout().includes('answered 302; not tried again (3 tries made)'));
      expect(redirecting.received.map((item) => [item.body.pause.pause_id, item.verified])).toEqual(Array(3).fill([pause.pause_id, true]));
      expect(target.received).toEqual([]);
      expect(server.stdout()).not.toContain(LINK_SECRET);
      await ws.close();
    } finally {
      await server.stop();
      await Promise.all([target.close(), redirecting.close()]);
    }
    expect(runCli(['serve', '--store', 'memory', '--webhook-max-attempts', '0']).output).toContain('--webhook-max-attempts must be an integer from 1');
  });

  it('should make links under --public-url', async () => {
    const receiver = await startReceiver(SECRET);
    const file = join(dir, 'webhooks.json');
    writeFileSync(file, JSON.stringify({ webhooks: [{ url: receiver.url, secret: SECRET }], link_secret: LINK_SECRET }));
    const server = await startCli(['--port', '0', '--debug', '--webhooks', file, '--public-url', 'https://agent.example.com/approvals/']);
    try {
      const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=public`);
      expect((await post(server.base, '/chat', { prompt: 'x', conv_id: 'public', overrides: { step_mode: true } })).status).toBe(200);
      await ws.next('debugger.pause');
      const event = await receiver.next(() => true);
      expect(event.verified).toBe(true);
      expect(event.body.links.continue).toMatch(/^https:\/\/agent\.example\.com\/approvals\/a\/[\w-]+\.[\w-]+$/);
      expect(server.stdout()).not.toContain(SECRET);
      expect(server.stdout()).not.toContain(LINK_SECRET);
      await ws.close();
    } finally {
      await server.stop();
      await receiver.close();
    }
  });
});

/** Resolves once `condition` holds, checked every few milliseconds (stdout has no event to wait on here). */
async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
