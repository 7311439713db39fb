import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import { get, post, request, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient, upgradeStatus } from '../helpers/server-ws-client.js';
import { parseSse } from '../helpers/ag-ui-client.js';
import { expectWellFormed } from '../helpers/well-formed.js';

const POST_ROUTES = ['/chat', '/chat/cancel', '/debug/step/enable', '/debug/step/disable', '/debug/continue', '/pauses/pause_fuzz', '/pauses/%E2%80%AE'];
const GET_ROUTES = ['/hydrate', '/debug/pauses', '/pauses', '/conversations', '/healthz', '/grants'];
/** Both WebSocket endpoints: a conversation's and the inbox's (docs/protocol.md, The inbox). */
const SOCKETS = ['/ws?conv_id=fuzz-ws', '/ws/pauses'];
/** What a socket may be sent besides pongs: the inbox streams the pauses the other fuzzed runs make. */
const isQuiet = (type: string): boolean => ['ws.hello', 'ws.pong', 'debugger.pause', 'debugger.resume', 'debugger.granted'].includes(type);

/** Values that look like our bodies, with any field possibly of any JSON type. */
const bodyLike = fc.record(
  {
    prompt: fc.oneof(fc.string(), fc.jsonValue()),
    conv_id: fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{1,10}$/), fc.string(), fc.jsonValue()),
    pause_id: fc.oneof(fc.string(), fc.jsonValue()),
    action: fc.oneof(fc.constantFrom('continue', 'deny', 'edit', 'answer', 'explode'), fc.jsonValue()),
    tool_call_ids: fc.oneof(fc.array(fc.string()), fc.jsonValue()),
    edits: fc.oneof(fc.dictionary(fc.string(), fc.jsonValue()), fc.jsonValue()),
    answers: fc.oneof(fc.dictionary(fc.string(), fc.jsonValue()), fc.jsonValue()),
    overrides: fc.oneof(
      fc.record({ step_mode: fc.jsonValue(), tools: fc.jsonValue(), system_prompt: fc.jsonValue(), max_iterations: fc.jsonValue() }, { requiredKeys: [] }),
      fc.jsonValue(),
    ),
    session_id: fc.jsonValue(),
    remember: fc.oneof(
      fc.record({ scope: fc.oneof(fc.constantFrom('conversation', 'profile', 'server'), fc.jsonValue()), tools: fc.oneof(fc.array(fc.string()), fc.jsonValue()), ttl_ms: fc.jsonValue() }, { requiredKeys: [] }),
      fc.jsonValue(),
    ),
  },
  { requiredKeys: [] },
);

describe('fuzzing the wire', () => {
  let t: TestServer;
  let victim: SemClient;
  beforeAll(async () => {
    // With webhooks, so the signed links' routes are fuzzed too (the receiver refuses connections: tried in the background).
    t = await startTestServer({ debug: true, webhooks: { webhooks: [{ url: 'http://127.0.0.1:9/', secret: 'fuzz-secret-0123456789' }], link_secret: 'fuzz-link-secret-0123456789' }, runtime: { pauseTimeoutMs: 60_000 } });
    victim = await SemClient.connect(`${t.wsBase}/ws?conv_id=victim`);
    await post(t.base, '/chat', { prompt: 'x', conv_id: 'victim', overrides: { step_mode: true } });
    await victim.next('debugger.pause');
  });
  afterAll(async () => {
    await victim.close();
    await t.close();
  });

  it('should answer any POST body with JSON and never a 5xx', async () => {
    const body = fc.oneof(bodyLike, fc.jsonValue(), fc.string(), fc.constantFrom('', '{', '[1,', 'null', '"x"', '{"prompt": "\\ud800"}'));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...POST_ROUTES), body, async (route, value) => {
        expectWellFormed(await request(t.base, 'POST', route, typeof value === 'string' ? value : JSON.stringify(value)));
      }),
      { numRuns: 300 },
    );
  });

  it('should answer any AG-UI body with a JSON error, or a stream of valid AG-UI events that ends its run', async () => {
    const message = fc.oneof(
      fc.record({ id: fc.string(), role: fc.constantFrom('user', 'assistant', 'tool', 'system', 'x'), content: fc.oneof(fc.string(), fc.jsonValue()) }, { requiredKeys: [] }),
      fc.jsonValue(),
    );
    const entry = fc.oneof(fc.record({ interruptId: fc.oneof(fc.string(), fc.jsonValue()), status: fc.oneof(fc.constantFrom('resolved', 'cancelled'), fc.jsonValue()), payload: fc.jsonValue() }, { requiredKeys: [] }), fc.jsonValue());
    const input = fc.record(
      {
        threadId: fc.oneof(fc.constantFrom('victim', 'fuzz-agui'), fc.stringMatching(/^[A-Za-z0-9_-]{1,10}$/), fc.jsonValue()),
        runId: fc.oneof(fc.string(), fc.jsonValue()),
        messages: fc.oneof(fc.array(message, { maxLength: 3 }), fc.jsonValue()),
        resume: fc.oneof(fc.array(entry, { maxLength: 3 }), fc.jsonValue()),
        forwardedProps: fc.oneof(fc.record({ stepwise: fc.oneof(fc.record({ step_mode: fc.jsonValue() }, { requiredKeys: [] }), fc.jsonValue()) }, { requiredKeys: [] }), fc.jsonValue()),
        tools: fc.jsonValue(),
      },
      { requiredKeys: ['threadId', 'runId', 'messages'] },
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/ag-ui', '/ag-ui/nope'), fc.oneof(input, fc.jsonValue(), fc.constantFrom('', '{', 'null')), async (route, value) => {
        const reply = await request(t.base, 'POST', route, typeof value === 'string' ? value : JSON.stringify(value));
        if (reply.status !== 200) return expectWellFormed(reply);
        expect(reply.headers.get('content-type')).toContain('text/event-stream');
        const events = parseSse(reply.body as string);
        expect(events[0]?.type).toBe('RUN_STARTED');
        expect(['RUN_FINISHED', 'RUN_ERROR']).toContain(events.at(-1)?.type);
      }),
      { numRuns: 200 },
    );
  });

  it('should answer any useChat-like body with a JSON error or a UI message stream', async () => {
    const part = fc.oneof(fc.record({ type: fc.constantFrom('text', 'tool-add', 'reasoning', 'x'), text: fc.jsonValue(), toolCallId: fc.string(), state: fc.constantFrom('approval-responded', 'input-available'), approval: fc.jsonValue() }, { requiredKeys: [] }), fc.jsonValue());
    const message = fc.oneof(fc.record({ id: fc.string(), role: fc.constantFrom('user', 'assistant', 'system', 'x'), parts: fc.oneof(fc.array(part, { maxLength: 3 }), fc.jsonValue()) }, { requiredKeys: [] }), fc.jsonValue());
    const body = fc.record({ id: fc.oneof(fc.constantFrom('victim', 'fuzz-ai'), fc.string(), fc.jsonValue()), messages: fc.oneof(fc.array(message, { maxLength: 3 }), fc.jsonValue()), stepwise: fc.jsonValue(), trigger: fc.jsonValue() }, { requiredKeys: [] });
    await fc.assert(
      fc.asyncProperty(fc.oneof(body, fc.jsonValue(), fc.constantFrom('', '{', 'null')), async (value) => {
        const reply = await request(t.base, 'POST', '/ai-sdk/chat', typeof value === 'string' ? value : JSON.stringify(value));
        if (reply.status !== 200) return expectWellFormed(reply);
        expect(reply.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
      }),
      { numRuns: 200 },
    );
  });

  it('should answer any token and body on the signed links\' route with JSON and never a 5xx', async () => {
    const token = fc.oneof(fc.string({ minLength: 1 }), fc.tuple(fc.base64String(), fc.base64String()).map(([a, b]) => `${a}.${b}`.replace(/[+/=]/g, '_')));
    await fc.assert(
      fc.asyncProperty(token, fc.oneof(bodyLike, fc.jsonValue()), fc.constantFrom('GET', 'POST'), async (raw, value, method) => {
        const reply = await request(t.base, method, `/a/${encodeURIComponent(raw)}`, method === 'POST' ? JSON.stringify(value) : undefined);
        expectWellFormed(reply);
        expect(reply.status).not.toBe(200);
      }),
      { numRuns: 200 },
    );
  });

  it('should answer any query string or path with JSON and never a 5xx', async () => {
    const query = fc.array(fc.tuple(fc.constantFrom('conv_id', 'since_seq', 'limit', 'tool', 'profile', 'x'), fc.oneof(fc.string(), fc.integer().map(String), fc.constant('victim'))), { maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...GET_ROUTES), query, async (route, pairs) => {
        const search = new URLSearchParams(pairs).toString();
        expectWellFormed(await get(t.base, `${route}?${search}`));
      }),
      { numRuns: 300 },
    );
    await fc.assert(
      fc.asyncProperty(fc.string().filter((s) => s !== '.' && s !== '..'), async (segment) => {
        expectWellFormed(await get(t.base, `/conversations/${encodeURIComponent(segment)}`));
        expectWellFormed(await request(t.base, 'DELETE', `/grants/${encodeURIComponent(segment)}`));
      }),
      { numRuns: 100 },
    );
  });

  it('should answer any Host with JSON and never a 5xx: 403 host_not_allowed unless it names loopback', async () => {
    const loopback = fc.tuple(fc.constantFrom('localhost', 'LOCALHOST', '127.0.0.1', '[::1]'), fc.option(fc.integer({ min: 0, max: 65_535 }))).map(([name, port]) => (port === null ? name : `${name}:${port}`));
    const foreign = fc.tuple(fc.stringMatching(/^[a-z0-9-]{1,12}$/), fc.constantFrom('.example', '.localhost.example', '.127.0.0.1.nip.io')).map(([name, domain]) => `${name}${domain}`);
    const any = fc.stringMatching(/^[\x21-\x7e]{1,40}$/);
    await fc.assert(
      fc.asyncProperty(fc.oneof(loopback, foreign, any), fc.constantFrom('/conversations', '/pauses', '/a/x.y', '/nothing'), async (host, path) => {
        const reply = await withHost(t.base, path, host);
        expectWellFormed(reply);
        const refused = reply.body.error?.code === 'host_not_allowed';
        if (refused) expect(reply.status).toBe(403);
        if (/^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i.test(host)) expect([host, refused]).toEqual([host, false]);
        if (host.endsWith('.example') || host.endsWith('.nip.io')) expect([host, refused]).toEqual([host, true]);
      }),
      { numRuns: 200 },
    );
    expect((await withHost(t.base, '/healthz', 'evil.example')).status).toBe(200);
  });

  it('should upgrade either socket or refuse it with a 4xx for any query string, never a 5xx', async () => {
    const value = fc.oneof(fc.string(), fc.integer().map(String), fc.constantFrom('0', '1', '10000', '10001', '1e3', ''));
    const query = fc.array(fc.tuple(fc.constantFrom('conv_id', 'since_seq', 'limit', 'access_token', 'x'), value), { maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/ws', '/ws/pauses'), query, async (path, pairs) => {
        const status = await upgradeStatus(`${t.wsBase}${path}?${new URLSearchParams(pairs).toString()}`);
        expect(status === 101 || (status >= 400 && status < 500)).toBe(true);
      }),
      { numRuns: 150 },
    );
    expect((await get(t.base, '/healthz')).status).toBe(200);
  });

  it('should ignore any WebSocket text message and keep the connection', async () => {
    const message = fc.oneof(fc.string(), fc.jsonValue().map((value) => JSON.stringify(value)));
    await fc.assert(
      // A client per run: all the runs on one would be a flood (docs/protocol.md "WebSocket").
      fc.asyncProperty(fc.constantFrom(...SOCKETS), fc.array(message, { minLength: 1, maxLength: 20 }), async (path, messages) => {
        const client = await SemClient.connect(`${t.wsBase}${path}`);
        for (const m of messages) client.ws.send(m);
        await client.ping();
        expect(client.frames.every((frame) => isQuiet(frame.type))).toBe(true);
        await client.close();
      }),
      { numRuns: 100 },
    );
  });

  it('should close a client that sends an oversized, binary or invalid UTF-8 message with its code, and only it', async () => {
    type Message = { readonly data: string | Buffer; readonly binary: boolean; readonly closeCode?: number };
    const garbage = fc.oneof(fc.string(), fc.jsonValue().map((value) => JSON.stringify(value)), fc.string().map((text) => `{"type":${text}`));
    // Each with the close code docs/protocol.md "WebSocket" gives it (the server's maxPayload is 64 KiB).
    const hostile = fc.oneof(
      fc.integer({ min: 64 * 1024 + 1, max: 256 * 1024 }).map((size): Message => ({ data: Buffer.alloc(size, 0x61), binary: false, closeCode: 1009 })),
      fc.uint8Array({ maxLength: 64 }).map((bytes): Message => ({ data: Buffer.from(bytes), binary: true, closeCode: 1003 })),
      // 0xff starts no UTF-8 sequence: a text message with it anywhere is invalid.
      fc.tuple(fc.uint8Array({ maxLength: 32 }), fc.uint8Array({ maxLength: 32 })).map(
        ([before, after]): Message => ({ data: Buffer.concat([before, Buffer.from([0xff]), after]), binary: false, closeCode: 1007 }),
      ),
    );
    const message = fc.oneof(garbage.map((text): Message => ({ data: text, binary: false })), hostile);
    const bystander = await SemClient.connect(`${t.wsBase}/ws?conv_id=fuzz-hostile`);
    const inboxBystander = await SemClient.connect(`${t.wsBase}/ws/pauses`);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/ws?conv_id=fuzz-hostile', '/ws/pauses'), fc.array(message, { minLength: 1, maxLength: 10 }), async (path, messages) => {
        const client = await SemClient.connect(`${t.wsBase}${path}`);
        for (const { data, binary } of messages) client.ws.send(data, { binary });
        // The first message the server refuses closes the client; nothing after it is read.
        const closeCode = messages.find((m) => m.closeCode !== undefined)?.closeCode;
        if (closeCode === undefined) {
          await client.ping();
          await client.close();
        } else {
          expect(await client.waitClose()).toBe(closeCode);
        }
      }),
      { numRuns: 100 },
    );
    await bystander.ping();
    expect(bystander.frames.map((frame) => frame.type)).toEqual(['ws.hello', 'ws.pong']);
    await inboxBystander.ping();
    expect(inboxBystander.closeCode).toBeUndefined();
    expect((await get(t.base, '/healthz')).status).toBe(200);
    await Promise.all([bystander.close(), inboxBystander.close()]);
  });

  it('should survive any bytes where WebSocket frames belong', async () => {
    const upgradeTo = (path: string): string =>
      `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
      `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/ws?conv_id=fuzz-bytes', '/ws/pauses'), fc.uint8Array({ minLength: 1, maxLength: 512 }), async (path, bytes) => {
        const upgrade = upgradeTo(path);
        // Whether ws refuses the bytes (1002, 1007, 1009) or waits for the rest of a frame, the
        // connection closes: at the latest when this end of it does.
        const socket = connect(Number(new URL(t.base).port), '127.0.0.1');
        socket.on('error', () => undefined);
        socket.resume();
        const closed = new Promise((resolve) => socket.once('close', resolve));
        socket.end(Buffer.concat([Buffer.from(upgrade), bytes]));
        await closed;
      }),
      { numRuns: 100 },
    );
    expect((await get(t.base, '/healthz')).status).toBe(200);
  });

  it('should leave the run in progress unharmed', async () => {
    expect((await get(t.base, '/healthz')).status).toBe(200);
    const pauses = (await get(t.base, '/debug/pauses?conv_id=victim')).body.pauses;
    expect(pauses).toHaveLength(1);
    await post(t.base, '/debug/continue', { pause_id: pauses[0].pause_id });
    await post(t.base, '/debug/continue', { pause_id: (await victim.next('debugger.pause')).pause_id });
    expect(await victim.next('run.end')).toMatchObject({ status: 'completed' });
    const frames = victim.sequenced;
    expect(frames.map((frame) => frame.seq)).toEqual(frames.map((_, i) => i + 1));
  });
});

/** A GET naming `host` in its `Host` header (fetch sets its own), with the body parsed as JSON when it is. */
function withHost(base: string, path: string, host: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: new URL(base).port, path, headers: { host } }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // Not JSON: expectWellFormed says so.
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}
