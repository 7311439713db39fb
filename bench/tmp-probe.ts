import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { loadStepwiseLib } from './lib.js';
import { createJsonPoster } from './post-json.js';
import { createEchoTool, createStepEngine } from './scenario.js';
const loaded = await loadStepwiseLib();
const { createServer } = await import(new URL('server/app.js', loaded.srcUrl).href);
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!.toFixed(3);
async function probe(kind: string, samples = 80) {
  const { lib, stores } = loaded;
  const store = kind === 'sqlite' ? stores.createSqliteStore({ dataDir: mkdtempSync(join(tmpdir(), 'p-')) }) : undefined;
  const runtime: any = { engine: createStepEngine(lib, samples + 10), tools: [createEchoTool(lib)], pauseTimeoutMs: 3_600_000, maxIterations: samples + 20, ...(store ? { store, hibernateAfterMs: Infinity } : {}) };
  const server = createServer({ debug: true, ...(store ? { store } : {}), runtime });
  await new Promise<void>((d) => server.http.listen(0, '127.0.0.1', d));
  const port = server.http.address().port;
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?conv_id=hib`);
  await new Promise((d) => ws.once('message', d));
  const frames: { at: number; text: string }[] = [];
  ws.on('message', (data) => frames.push({ at: performance.now(), text: data.toString() }));
  const poster = createJsonPoster(`http://127.0.0.1:${port}`);
  const next = async (from: number) => { for (;;) { const i = frames.findIndex((f, k) => k >= from && f.text.includes('"type":"debugger.pause"')); if (i >= 0) return JSON.parse(frames[i]!.text).event.pause_id; await new Promise((d) => setTimeout(d, 1)); } };
  await poster.post('/chat', { prompt: 'go', conv_id: 'hib', overrides: { step_mode: true } });
  let pauseId = await next(0);
  const toReply: number[] = []; const toFrame: number[] = [];
  for (let i = 0; i < samples; i++) {
    await new Promise((d) => setTimeout(d, 20));
    const seen = frames.length; const sent = performance.now();
    await poster.post('/debug/continue', { pause_id: pauseId });
    toReply.push(performance.now() - sent);
    pauseId = await next(seen);
    toFrame.push(frames[seen]!.at - sent);
  }
  console.log(kind, 'reply', med(toReply), 'frame', med(toFrame));
  poster.close(); ws.close(); await server.close(); await store?.close();
}
for (let r = 0; r < 2; r++) { await probe('memory'); await probe('sqlite'); }
process.exit(0);
