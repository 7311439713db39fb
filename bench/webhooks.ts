import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { createScriptedEngine } from '../src/engines/scripted.js';
import { createServer } from '../src/server/app.js';
import { defineTool } from '../src/tools/define-tool.js';
import { entry, median, percentile, type BenchEntry } from './bench-entry.js';

/**
 * `webhook_latency` (docs/protocol.md, Webhooks and signed links): from a pause published on the hub to
 * a receiver on loopback having the whole signed POST of it, in ms; median and p99 over a stepped run
 * whose pauses are answered one by one (each answered only after its POST arrived, so the samples do
 * not overlap). Server and receiver share this process, as they would share a machine's loopback.
 */

const SAMPLES = 200;
const WARMUP = 20;
const SECRET = 'bench-webhook-secret-0123456789';

export async function runWebhookBenchmarks(samples = SAMPLES): Promise<{ entries: BenchEntry[]; notes: string[] }> {
  const arrivals: { pauseId: string; at: number }[] = [];
  let wake: (() => void) | undefined;
  const receiver = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      arrivals.push({ pauseId: (JSON.parse(body) as { pause: { pause_id: string } }).pause.pause_id, at: performance.now() });
      res.writeHead(204).end();
      wake?.();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const steps = Math.ceil((samples + WARMUP) / 2) + 1;
  const add = defineTool({ name: 'add', description: 'Adds.', parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => ({ sum: a + b }) });
  const responses = Array.from({ length: steps }, (_, i) => ({ text: `step ${i}`, tool_calls: [{ name: 'add', arguments: { a: i, b: 1 } }] }));
  const server = createServer({
    debug: true,
    webhooks: { webhooks: [{ url, secret: SECRET }], link_secret: 'bench-link-secret-0123456789' },
    runtime: { engine: createScriptedEngine({ responses: [...responses, { text: 'done' }] }), tools: [add], maxIterations: steps + 5, pauseTimeoutMs: 60_000 },
  });
  await new Promise<void>((resolve) => server.http.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.http.address() as AddressInfo).port}`;
  const published = new Map<string, number>();
  const watching = server.stepwise.hub.events$.subscribe(({ event }) => {
    if (event.type === 'paused') published.set(event.pause.pause_id, performance.now());
  });
  const postJson = (path: string, body: unknown): Promise<Response> =>
    fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const latencies: number[] = [];
  try {
    await postJson('/chat', { prompt: 'go', conv_id: 'bench-hooks', overrides: { step_mode: true } });
    for (let taken = 0; taken < samples + WARMUP; taken += 1) {
      // Waits for the receiver's next POST (a predicate, not a clock).
      while (arrivals.length <= taken) await new Promise<void>((resolve) => (wake = resolve));
      const { pauseId, at } = arrivals[taken] as { pauseId: string; at: number };
      if (taken >= WARMUP) latencies.push(at - (published.get(pauseId) ?? at));
      await (await postJson('/debug/continue', { pause_id: pauseId })).arrayBuffer();
    }
  } finally {
    watching.unsubscribe();
    await server.close();
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
  return {
    entries: [entry('webhook_latency', median(latencies), 'ms'), entry('webhook_latency_p99', percentile(latencies, 99), 'ms')],
    notes: [`webhooks: ${latencies.length} pauses, each POSTed signed to a receiver on loopback`],
  };
}
