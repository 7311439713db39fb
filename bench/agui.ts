import { Worker } from 'node:worker_threads';
import { entry, median, percentile, type BenchEntry } from './bench-entry.js';

/**
 * `agui_resume` (ms, median; docs/ag-ui.md): from sending an AG-UI resume (`POST /ag-ui` with `resume`
 * answering every interrupt of the pause) to the arrival of the first event of the resumed run (the
 * one after `RUN_STARTED`), on loopback: the server in a worker thread (bench/agui-server.ts), the client
 * here reading the SSE body with fetch, as a browser reads it on an event loop of its own (in one
 * thread the client would wait for the rest of the server's segment before it can read the first event).
 * One run of many steps, step mode on: samples alternate `after_inference` (first event: the tool's
 * result) and `after_tools` (first event: the next inference's text). Also `agui_resume_p99`.
 */

const SAMPLES = 300;
const WARMUP = 40;

interface Interrupt {
  readonly id: string;
  readonly reason: string;
}

/** Reads an SSE body to its end: when the first event after `RUN_STARTED` arrived (ms), and the last event. */
async function readRun(response: Response, sentAt: number): Promise<{ firstMs: number; last: { type: string; outcome?: { interrupts?: Interrupt[] } } }> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  let firstMs = Number.NaN;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (Number.isNaN(firstMs) && text.split('\n\n').filter((block) => block.startsWith('data: ')).length >= 2) firstMs = performance.now() - sentAt;
  }
  const blocks = text.split('\n\n').filter((block) => block.startsWith('data: '));
  return { firstMs, last: JSON.parse(blocks.at(-1)?.slice(6) ?? '{}') as { type: string; outcome?: { interrupts?: Interrupt[] } } };
}

const answer = (interrupt: Interrupt): unknown => (interrupt.reason === 'tool_call' ? { approved: true } : {});

/** The server, started in a worker thread (bench/agui-server.ts), with tsx as its loader, as `npm run bench` runs. */
async function startServerThread(steps: number): Promise<{ url: string; close: () => Promise<void> }> {
  const entry = new URL('./agui-server.ts', import.meta.url).href;
  // A worker does not inherit tsx's loader: the thread registers it before it loads the TypeScript entry.
  const source = `import('tsx/esm/api').then(({ register }) => (register(), import(${JSON.stringify(entry)})))`;
  const worker = new Worker(source, { eval: true });
  const next = (): Promise<unknown> => new Promise((resolve, reject) => (worker.once('message', resolve), worker.once('error', reject)));
  worker.postMessage({ steps });
  const { port } = (await next()) as { port: number };
  const close = async (): Promise<void> => {
    worker.postMessage('close');
    await next();
    await worker.terminate();
  };
  return { url: `http://127.0.0.1:${port}/ag-ui`, close };
}

export async function runAgUiBenchmarks(): Promise<BenchEntry[]> {
  const { url, close } = await startServerThread(Math.ceil((SAMPLES + WARMUP) / 2) + 2);
  const post = (body: unknown): Promise<Response> => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify(body) });
  try {
    const threadId = 'bench-agui';
    const message = { id: 'm1', role: 'user', content: 'add, many times' };
    let { last } = await readRun(await post({ threadId, runId: 'r0', messages: [message], forwardedProps: { stepwise: { step_mode: true } } }), performance.now());
    const samples: number[] = [];
    for (let i = 0; i < SAMPLES + WARMUP; i++) {
      const interrupts = last.outcome?.interrupts ?? [];
      if (interrupts.length === 0) throw new Error(`agui_resume: the run did not pause (${last.type})`);
      const resume = interrupts.map((interrupt) => ({ interruptId: interrupt.id, status: 'resolved', payload: answer(interrupt) }));
      const sentAt = performance.now();
      const read = await readRun(await post({ threadId, runId: `r${i + 1}`, messages: [message], resume }), sentAt);
      last = read.last;
      if (i >= WARMUP) samples.push(read.firstMs);
    }
    return [entry('agui_resume', median(samples), 'ms'), entry('agui_resume_p99', percentile(samples, 99), 'ms')];
  } finally {
    await close();
  }
}

// `npx tsx bench/agui.ts` prints the figures alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await runAgUiBenchmarks());
}
