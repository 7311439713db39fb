import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import express from 'express';
import { WebSocket } from 'ws';
import { parseTokens } from '../../src/server/auth.js';
import { createScriptedEngine } from '../../src/engines/scripted.js';
import { createStepwise } from '../../src/sessions/runtime.js';
import { createStepwiseServer } from '../../src/server/stepwise-server.js';
import { ensureBuilt, runCli, startCli, type CliServer } from '../helpers/server-cli.js';
import { createTestTools, startTestServer, toolThenAnswer, type TestServer } from '../helpers/server-harness.js';

/** A reply to a request sent with a `Host` of our choosing (fetch sets its own). */
interface HostReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: any;
}

/** `method path` on `base`'s port, naming `host` in the `Host` header, as a rebound page's browser would. */
function withHost(base: string, path: string, host: string, options: { method?: string; headers?: Record<string, string> } = {}): Promise<HostReply> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: { ...options.headers, host } }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // A page, not JSON.
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    req.on('error', reject);
    req.end(options.method === 'POST' ? '{}' : undefined);
  });
}

/** A real `ws` client's upgrade with that `Host`: 101 when accepted, else the refusal's status and JSON body. */
function upgradeWithHost(url: string, host: string): Promise<{ status: number; body?: any }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { host } });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
        ws.terminate();
      });
    });
    ws.once('open', () => {
      resolve({ status: 101 });
      ws.close();
    });
    ws.once('error', reject);
  });
}

const FOREIGN = ['evil.example', 'evil.example:3000', 'localhost.evil.example', '127.0.0.1.nip.io:80', 'EVIL.example', '127.0.0.2', '[::2]:80'];
const LOOPBACK = ['localhost', 'LocalHost:1234', '127.0.0.1', '127.0.0.1:80', '[::1]', '[::1]:3000'];
const LINK_SECRET = 'browser-guards-link-secret-0123';

/** `Host` (DNS rebinding) and framing (clickjacking) guards of docs/protocol.md, Browsers. */
describe('browser guards of a server without tokens', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, webhooks: { webhooks: [{ url: 'http://127.0.0.1:9/', secret: 'browser-guards-secret-0123' }], link_secret: LINK_SECRET } });
  });
  afterAll(() => t.close());

  it('should forbid framing of every page and reply: the dashboard, its files, a link page, JSON, errors', async () => {
    const pages: [string, number, string][] = [
      ['/', 200, 'text/html'],
      ['/inbox.html', 200, 'text/html'],
      ['/app.js', 200, 'javascript'],
      ['/style.css', 200, 'text/css'],
      ['/a/not-a-token', 403, 'text/html'],
      ['/conversations', 200, 'application/json'],
      ['/healthz', 200, 'application/json'],
      ['/no-such-route', 404, 'application/json'],
    ];
    for (const [path, status, type] of pages) {
      const reply = await fetch(`${t.base}${path}`, { headers: { accept: path.startsWith('/a/') ? 'text/html' : '*/*' } });
      expect([path, reply.status, reply.headers.get('content-type')]).toEqual([path, status, expect.stringContaining(type)]);
      expect([path, reply.headers.get('x-frame-options')]).toEqual([path, 'DENY']);
      expect([path, reply.headers.get('content-security-policy')]).toEqual([path, expect.stringContaining("frame-ancestors 'none'")]);
    }
    // The link page keeps its own stricter policy (no script at all).
    expect((await fetch(`${t.base}/a/not-a-token`)).headers.get('content-security-policy')).toContain("default-src 'none'");
  });

  it('should refuse a foreign Host with 403 host_not_allowed on every route, and a refusal is framed out too', async () => {
    for (const host of FOREIGN) {
      for (const [method, path] of [['GET', '/'], ['GET', '/conversations'], ['POST', '/chat'], ['GET', '/inbox.html'], ['GET', '/a/not-a-token'], ['GET', '/nothing']]) {
        const reply = await withHost(t.base, path as string, host, { method: method as string, headers: { 'content-type': 'application/json' } });
        expect([host, method, path, reply.status, reply.body.error?.code]).toEqual([host, method, path, 403, 'host_not_allowed']);
        expect(reply.headers['x-frame-options']).toBe('DENY');
      }
    }
    // No Host at all (HTTP/1.0; Node answers 400 to an HTTP/1.1 request without one) names no loopback either.
    const raw = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(Number(new URL(t.base).port), '127.0.0.1', () => socket.end('GET /conversations HTTP/1.0\r\n\r\n'));
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 403 [^]*"code":"host_not_allowed"/);
  });

  it('should refuse a foreign Host on both sockets before upgrading', async () => {
    for (const host of FOREIGN) {
      for (const path of ['/ws?conv_id=rebound', '/ws/pauses']) {
        expect([host, path, await upgradeWithHost(`${t.wsBase}${path}`, host)]).toEqual([host, path, { status: 403, body: { error: { code: 'host_not_allowed', message: expect.any(String) } } }]);
      }
    }
  });

  it('should let loopback names through on any port, and the probes whatever the Host', async () => {
    for (const host of LOOPBACK) {
      expect([host, (await withHost(t.base, '/conversations', host)).status]).toEqual([host, 200]);
      expect([host, (await upgradeWithHost(`${t.wsBase}/ws?conv_id=loopback`, host)).status]).toEqual([host, 101]);
      expect([host, (await upgradeWithHost(`${t.wsBase}/ws/pauses`, host)).status]).toEqual([host, 101]);
    }
    expect(await withHost(t.base, '/healthz', 'evil.example')).toMatchObject({ status: 200, body: { ok: true } });
    // `/livez` passes the Host check whether or not this server has the route.
    expect((await withHost(t.base, '/livez', 'evil.example')).status).not.toBe(403);
  });
});

describe('allowedHosts, tokens and a mounted server', () => {
  it('should let listed hosts through, any case, with or without their port', async () => {
    const t = await startTestServer({ allowedHosts: ['Agent.Example', 'other.example:8443'] });
    try {
      for (const host of ['agent.example', 'AGENT.EXAMPLE:9999', 'other.example:8443', 'localhost']) expect([host, (await withHost(t.base, '/conversations', host)).status]).toEqual([host, 200]);
      for (const host of ['other.example', 'other.example:8444', 'agent.example.evil']) expect([host, (await withHost(t.base, '/conversations', host)).status]).toEqual([host, 403]);
      expect((await upgradeWithHost(`${t.wsBase}/ws?conv_id=listed`, 'agent.example')).status).toBe(101);
      expect((await upgradeWithHost(`${t.wsBase}/ws/pauses`, 'other.example:8444')).status).toBe(403);
    } finally {
      await t.close();
    }
    expect(() => createStepwiseServer(createStepwise({ engine: createScriptedEngine(toolThenAnswer(1)) }), { allowedHosts: ['http://agent.example'] })).toThrow(
      'allowedHosts: "http://agent.example" is not a host name or host:port',
    );
  });

  it('should not check the Host when tokens are configured: the token is the credential', async () => {
    const t = await startTestServer({ tokens: parseTokens('alice:token-alice') });
    try {
      expect((await withHost(t.base, '/conversations', 'evil.example')).status).toBe(401);
      expect((await withHost(t.base, '/conversations', 'evil.example', { headers: { authorization: 'Bearer token-alice' } })).status).toBe(200);
      expect((await upgradeWithHost(`${t.wsBase}/ws?conv_id=tokened&access_token=token-alice`, 'evil.example')).status).toBe(101);
      expect((await upgradeWithHost(`${t.wsBase}/ws/pauses?access_token=token-alice`, 'evil.example')).status).toBe(101);
    } finally {
      await t.close();
    }
  });

  it('should guard the routes and sockets under a prefix, and leave the application its own', async () => {
    const stepwise = createStepwise({ engine: createScriptedEngine(toolThenAnswer(1)), tools: createTestTools() });
    const mounted = createStepwiseServer(stepwise);
    const app = express();
    app.get('/hello', (_req, res) => {
      res.json({ mine: true });
    });
    app.use('/agent', mounted.router);
    const http: Server = createHttpServer(app);
    mounted.attach(http, { path: '/agent/ws' });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    try {
      expect(await withHost(base, '/agent/conversations', 'evil.example')).toMatchObject({ status: 403, body: { error: { code: 'host_not_allowed' } } });
      expect((await withHost(base, '/agent/', 'evil.example')).status).toBe(403);
      expect((await withHost(base, '/agent/healthz', 'evil.example')).status).toBe(200);
      expect((await withHost(base, '/agent/conversations', 'localhost:80')).status).toBe(200);
      expect(await withHost(base, '/hello', 'evil.example')).toMatchObject({ status: 200, body: { mine: true } });
      const wsBase = base.replace(/^http/, 'ws');
      expect((await upgradeWithHost(`${wsBase}/agent/ws?conv_id=mounted`, 'evil.example')).status).toBe(403);
      expect((await upgradeWithHost(`${wsBase}/agent/ws/pauses`, 'evil.example')).status).toBe(403);
      expect((await upgradeWithHost(`${wsBase}/agent/ws?conv_id=mounted`, 'localhost')).status).toBe(101);
    } finally {
      stepwise.dispose();
      await mounted.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    }
  });
});

describe('serve --allowed-hosts', { timeout: 60_000 }, () => {
  beforeAll(() => ensureBuilt(), 120_000);
  let cli: CliServer | undefined;
  afterAll(async () => {
    await cli?.stop();
  });

  it('should let the listed hosts through the real CLI, refuse others, and say so in --help', async () => {
    cli = await startCli(['--port', '0', '--allowed-hosts', 'agent.example, Approvals.Example:8443']);
    expect((await withHost(cli.base, '/conversations', 'agent.example:3000')).status).toBe(200);
    expect((await withHost(cli.base, '/conversations', 'approvals.example:8443')).status).toBe(200);
    expect(await withHost(cli.base, '/conversations', 'evil.example')).toMatchObject({ status: 403, body: { error: { code: 'host_not_allowed' } } });
    expect((await upgradeWithHost(`${cli.wsBase}/ws?conv_id=cli`, 'agent.example')).status).toBe(101);
    expect((await upgradeWithHost(`${cli.wsBase}/ws/pauses`, 'evil.example')).status).toBe(403);
    expect((await withHost(cli.base, '/healthz', 'evil.example')).status).toBe(200);

    const help = runCli(['serve', '--help']).output.replace(/\s+/g, ' ');
    expect(help).toMatch(/--allowed-hosts LIST without auth tokens, .*host_not_allowed.*\. Default: none: only localhost, 127\.0\.0\.1 and \[::1\], on any port\./);
    const bad = runCli(['serve', '--port', '0', '--allowed-hosts', 'https://agent.example']);
    expect(bad.status).toBe(1);
    expect(bad.output).toContain('--allowed-hosts takes host names with or without :port, got "https://agent.example"');
  });
});
