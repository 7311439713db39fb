import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { WebSocket, WebSocketServer } from 'ws';
import { createScriptedEngine } from '../../src/engines/scripted.js';
import { createStepwise, type Stepwise } from '../../src/sessions/runtime.js';
import { createStepwiseServer, type StepwiseServer } from '../../src/server/stepwise-server.js';
import { createTestTools, get, post, toolThenAnswer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

/**
 * The mountable server (docs/library.md, A server inside your app): an application's own express app
 * and http server, stepwise's router under `/agent` and its WebSocket at `/agent/ws`, next to the
 * application's own route and its own WebSocket endpoint.
 */
describe('createStepwiseServer mounted in an application', () => {
  let http: Server;
  let stepwise: Stepwise;
  let mounted: StepwiseServer;
  let own: WebSocketServer;
  let base = '';

  beforeEach(async () => {
    stepwise = createStepwise({ engine: createScriptedEngine(toolThenAnswer(2)), tools: createTestTools() });
    mounted = createStepwiseServer(stepwise, { debug: true });
    const app = express();
    app.get('/hello', (_req, res) => {
      res.json({ mine: true });
    });
    app.use('/agent', mounted.router);
    http = createHttpServer(app);
    mounted.attach(http, { path: '/agent/ws' });
    // The application's own socket: stepwise leaves its upgrades alone.
    own = new WebSocketServer({ noServer: true });
    http.on('upgrade', (req, socket, head) => {
      if (new URL(req.url ?? '/', 'http://x').pathname === '/echo') own.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data) => ws.send(`echo ${String(data)}`)));
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    stepwise.dispose();
    await mounted.close();
    for (const ws of own.clients) ws.terminate();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  });

  it('should serve its routes under the prefix and leave the application its own route', async () => {
    expect((await get(base, '/hello')).body).toEqual({ mine: true });
    expect((await get(base, '/agent/healthz')).body).toEqual({ ok: true });
    const missing = await get(base, '/agent/nothing');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    expect((await get(base, '/healthz')).status).toBe(404);
    const page = await fetch(`${base}/agent/`);
    expect(page.headers.get('content-type')).toContain('text/html');
  });

  it('should stream a run to a WebSocket client at the attached path, and step it from the prefixed routes', async () => {
    const client = await SemClient.connect(`${base.replace('http', 'ws')}/agent/ws?conv_id=m1`);
    expect(client.hello.conv_id).toBe('m1');
    expect((await post(base, '/agent/chat', { prompt: 'go', conv_id: 'm1', overrides: { step_mode: true } })).status).toBe(200);
    const pause = await client.waitFor((frame) => frame.type === 'debugger.pause');
    expect((await get(base, '/agent/debug/pauses')).body.pauses.map((each: { pause_id: string }) => each.pause_id)).toEqual([pause.pause_id]);
    expect((await post(base, '/agent/debug/step/disable', { conv_id: 'm1' })).status).toBe(200);
    expect(await client.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
    const hydrated = (await get(base, '/agent/hydrate?conv_id=m1')).body;
    expect(hydrated.frames.map((frame: { event: { seq: number } }) => frame.event.seq)).toEqual(client.sequenced.map((frame) => frame.seq));
    await client.close();
  });

  it("should leave the application's other upgrades to it, and refuse none of them", async () => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}/echo`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const reply = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
    ws.send('hi');
    expect(await reply).toBe('echo hi');
    ws.close();
  });
});
