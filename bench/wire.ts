import type { AddressInfo } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { WebSocket, WebSocketServer } from 'ws';
import { z } from 'zod';
import { createScriptedEngine } from '../src/engines/scripted.js';
import { createServer, type StepwiseHttpServer as StepwiseServer } from '../src/server/app.js';
import type { StepwiseEvent } from '../src/streams/events.js';
import { defineTool } from '../src/tools/define-tool.js';
import { entry, median, percentile, type BenchEntry } from './bench-entry.js';
import { createJsonPoster } from './post-json.js';

/**
 * Over the wire (README.md, Benchmarks), on loopback, clients in this process:
 * - `resume_wire`: from sending `POST /debug/continue` to the arrival of the next WebSocket frame of
 *   that conversation (the `debugger.resume` it causes), step mode on; median and p99.
 * - `fanout_N`: frames/s delivered to N clients of one conversation. Ours: a recorded run's events
 *   republished to the hub in one burst, through the frame encoder and forwarder. Baseline: a raw
 *   `ws` server given the same frames, serializing each once and calling `send` on each client.
 *   Both start from data in memory and stop when every client has received every frame.
 */

const RESUME_SAMPLES = 400;
const RESUME_WARMUP = 50;
const FANOUT_CLIENTS = [1, 10, 100] as const;
const FANOUT_REPEATS = 5;
const RECORDED_STEPS = 250;
/** Deliveries per measurement (frames × clients), so even one client is timed over a long burst. */
const FANOUT_DELIVERIES = 100_000;

function createBenchServer(steps: number): StepwiseServer {
  const add = defineTool({
    name: 'add',
    description: 'Adds two numbers.',
    parameters: z.object({ a: z.number(), b: z.number() }),
    // Async, as most real tools are.
    execute: async ({ a, b }) => ({ sum: a + b }),
  });
  const responses = Array.from({ length: steps }, (_, i) => ({ text: `step ${i} ok`, tool_calls: [{ name: 'add', arguments: { a: i, b: 1 } }] }));
  return createServer({
    debug: true,
    runtime: { engine: createScriptedEngine({ responses: [...responses, { text: 'done' }] }), tools: [add], maxIterations: steps + 5, pauseTimeoutMs: 60_000 },
  });
}

async function listen(server: { listen(port: number, host: string, done: () => void): unknown; address(): unknown }): Promise<number> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return (server.address() as AddressInfo).port;
}

/** Connects and resolves once the first message (our `ws.hello`) arrived, or at open for the raw server. */
function connect(url: string, waitFirstMessage: boolean): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('error', reject);
    if (waitFirstMessage) ws.once('message', () => resolve(ws));
    else ws.once('open', () => resolve(ws));
  });
}

/** Resolves when every client has received `count` more messages. */
function receiveAll(clients: readonly WebSocket[], count: number): Promise<void> {
  return Promise.all(
    clients.map(
      (ws) =>
        new Promise<void>((resolve) => {
          let seen = 0;
          const onMessage = (): void => {
            if (++seen < count) return;
            ws.off('message', onMessage);
            resolve();
          };
          ws.on('message', onMessage);
        }),
    ),
  ).then(() => undefined);
}

async function closeAll(clients: readonly WebSocket[]): Promise<void> {
  await Promise.all(clients.map((ws) => new Promise<void>((done) => (ws.once('close', () => done()), ws.close()))));
}

/** Step mode on, one long run: time each continue until the next frame arrives. */
async function measureResume(base: string, wsBase: string): Promise<number[]> {
  const ws = await connect(`${wsBase}/ws?conv_id=resume`, true);
  const pauses: string[] = [];
  let onFrame: ((at: number) => void) | undefined;
  ws.on('message', (data) => {
    const at = performance.now();
    onFrame?.(at);
    const text = data.toString();
    if (text.includes('"type":"debugger.pause"')) pauses.push((JSON.parse(text) as { event: { pause_id: string } }).event.pause_id);
  });
  const poster = createJsonPoster(base);
  const postJson = poster.post;
  const nextPause = async (): Promise<string> => {
    while (pauses.length === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    return pauses.shift() as string;
  };
  await postJson('/chat', { prompt: 'go', conv_id: 'resume', overrides: { step_mode: true } });
  const samples: number[] = [];
  for (let i = 0; i < RESUME_SAMPLES + RESUME_WARMUP; i++) {
    const pauseId = await nextPause();
    const arrived = new Promise<number>((resolve) => (onFrame = resolve));
    const sent = performance.now();
    const reply = postJson('/debug/continue', { pause_id: pauseId });
    const at = await arrived;
    onFrame = undefined;
    await reply;
    if (i >= RESUME_WARMUP) samples.push(at - sent);
  }
  await postJson('/chat/cancel', { conv_id: 'resume' });
  poster.close();
  await closeAll([ws]);
  return samples;
}

/** A real run's events, to replay as a burst: the same frames our clients and the baseline's get. */
async function recordRun(server: StepwiseServer): Promise<StepwiseEvent[]> {
  const session = server.stepwise.sessions.open({ conv_id: 'record' });
  await session.start({ prompt: 'go' }).result();
  return server.stepwise.hub.buffered('record').frames.map((frame) => frame.event);
}

/** Our rate: every client counts its frames, nothing more, as the baseline's clients do. */
async function fanoutOurs(server: StepwiseServer, wsBase: string, events: readonly StepwiseEvent[], clients: number, conv: string): Promise<number> {
  const sockets = await Promise.all(Array.from({ length: clients }, () => connect(`${wsBase}/ws?conv_id=${conv}`, true)));
  const retargeted = events.map((event) => ({ ...event, conv_id: conv }));
  const done = receiveAll(sockets, events.length);
  const started = performance.now();
  for (const event of retargeted) server.stepwise.hub.publish(event);
  await done;
  const elapsed = (performance.now() - started) / 1000;
  await closeAll(sockets);
  return (events.length * clients) / elapsed;
}

/**
 * The frame texts one client of ours receives for `events`, untimed: the baseline writes the same
 * bytes. Kept out of the timed bursts, where turning each frame into a string and holding 100 000 of
 * them would charge our side alone with work (and garbage) the baseline's clients do not do.
 */
async function recordTexts(server: StepwiseServer, wsBase: string, events: readonly StepwiseEvent[], conv: string): Promise<string[]> {
  const [socket] = await Promise.all([connect(`${wsBase}/ws?conv_id=${conv}`, true)]);
  const texts: string[] = [];
  const done = receiveAll([socket as WebSocket], events.length);
  socket?.on('message', (data) => texts.push(String(data)));
  for (const event of events) server.stepwise.hub.publish({ ...event, conv_id: conv });
  await done;
  await closeAll([socket as WebSocket]);
  return texts;
}

/**
 * The raw server serializes each frame once and sends it to every client, as a plain `ws` server would
 * (`text`: the JSON string to each, which `ws` turns into bytes per client). `best`: the frame's bytes
 * made once and the same Buffer sent to every client, the best a hand-written server does
 * (`fanout_N_best`).
 */
async function fanoutRaw(texts: readonly string[], clients: number, mode: 'text' | 'best' = 'text'): Promise<number> {
  const frames = texts.map((text) => JSON.parse(text) as unknown);
  const http = createHttpServer();
  const wss = new WebSocketServer({ server: http });
  const port = await listen(http);
  const joined: WebSocket[] = [];
  const allJoined = new Promise<void>((resolve) => wss.on('connection', (ws) => joined.push(ws) === clients && resolve()));
  const sockets = await Promise.all(Array.from({ length: clients }, () => connect(`ws://127.0.0.1:${port}`, false)));
  await allJoined;
  const done = receiveAll(sockets, texts.length);
  const started = performance.now();
  for (const frame of frames) {
    const text = JSON.stringify(frame);
    if (mode === 'best') {
      const bytes = Buffer.from(text);
      for (const ws of joined) ws.send(bytes, { binary: false });
    } else for (const ws of joined) ws.send(text);
  }
  await done;
  const elapsed = (performance.now() - started) / 1000;
  await closeAll(sockets);
  wss.close();
  await new Promise<void>((resolve) => http.close(() => resolve()));
  return (texts.length * clients) / elapsed;
}

/** Which cases to run; all by default (`npm run bench`), fewer to profile one. */
export interface WireBenchOptions {
  readonly resume?: boolean;
  readonly fanoutClients?: readonly number[];
}

export async function runWireBenchmarks(options: WireBenchOptions = {}): Promise<BenchEntry[]> {
  const { resume: withResume = true, fanoutClients = FANOUT_CLIENTS } = options;
  const server = createBenchServer(RESUME_SAMPLES + RESUME_WARMUP + RECORDED_STEPS);
  const port = await listen(server.http);
  const base = `http://127.0.0.1:${port}`;
  const wsBase = `ws://127.0.0.1:${port}`;
  try {
    const entries: BenchEntry[] = [];
    if (withResume) {
      const resume = await measureResume(base, wsBase);
      entries.push(entry('resume_wire', median(resume), 'ms'), entry('resume_wire_p99', percentile(resume, 99), 'ms'));
    }
    const events = (await recordRun(server)).slice(0, RECORDED_STEPS * 8);
    for (const clients of fanoutClients) {
      const ours: number[] = [];
      const raw: number[] = [];
      const best: number[] = [];
      const burst = Array.from({ length: Math.max(1, Math.round(FANOUT_DELIVERIES / clients / events.length)) }, () => events).flat();
      const texts = await recordTexts(server, wsBase, burst, `fan-${clients}-recorded`);
      for (let repeat = 0; repeat < FANOUT_REPEATS; repeat++) {
        ours.push(await fanoutOurs(server, wsBase, burst, clients, `fan-${clients}-${repeat}`));
        raw.push(await fanoutRaw(texts, clients));
        best.push(await fanoutRaw(texts, clients, 'best'));
      }
      entries.push(entry(`fanout_${clients}`, median(ours), 'frames/s', median(raw)));
      entries.push(entry(`fanout_${clients}_best`, median(ours), 'frames/s', median(best)));
    }
    return entries;
  } finally {
    await server.close();
  }
}
