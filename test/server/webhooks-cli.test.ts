import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { post } from '../helpers/server-harness.js';
import { ensureBuilt, runCli, startCli } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { startReceiver } from '../helpers/webhook-receiver.js';

const SECRET = 'cli-webhook-secret-0123456789';

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

  it('should say at start that the links need debug mode when it is off, and not when it is on', async () => {
    const file = join(dir, 'quiet.json');
    writeFileSync(file, JSON.stringify({ webhooks: [{ url: 'http://127.0.0.1:9/', secret: SECRET }] }));
    for (const [flags, warned] of [[[], true], [['--debug'], false]] as const) {
      const server = await startCli(['--port', '0', '--store', 'memory', '--webhooks', file, ...flags]);
      try {
        expect(server.stdout().includes('their links answer 404 without debug mode')).toBe(warned);
      } finally {
        await server.stop();
      }
    }
  });

  it('should make links under --public-url', async () => {
    const receiver = await startReceiver(SECRET);
    const file = join(dir, 'webhooks.json');
    writeFileSync(file, JSON.stringify({ webhooks: [{ url: receiver.url, secret: SECRET }] }));
    const server = await startCli(['--port', '0', '--debug', '--webhooks', file, '--public-url', 'https://agent.example.com/approvals/']);
    try {
      const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=public`);
      expect((await post(server.base, '/chat', { prompt: 'x', conv_id: 'public', overrides: { step_mode: true } })).status).toBe(200);
      await ws.next('debugger.pause');
      const event = await receiver.next(() => true);
      expect(event.verified).toBe(true);
      expect(event.body.links.continue).toMatch(/^https:\/\/agent\.example\.com\/approvals\/a\/[\w-]+\.[\w-]+$/);
      expect(server.stdout()).not.toContain(SECRET);
      await ws.close();
    } finally {
      await server.stop();
      await receiver.close();
    }
  });
});
