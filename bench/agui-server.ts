import type { AddressInfo } from 'node:net';
import { parentPort } from 'node:worker_threads';
import { z } from 'zod';
import { createScriptedEngine } from '../src/engines/scripted.js';
import { createServer } from '../src/server/app.js';
import { defineTool } from '../src/tools/define-tool.js';

/**
 * The server of `agui_resume` (bench/agui.ts), in a worker thread of its own: the client then reads its
 * stream as a browser would, on an event loop the server's run does not keep busy. One run of `steps`
 * steps, one async tool call each. Posts its port once listening; stops when told `close`.
 */
const add = defineTool({
  name: 'add',
  description: 'Adds two numbers.',
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => ({ sum: a + b }),
});

export async function startAgUiBenchServer(steps: number): Promise<{ port: number; close: () => Promise<void> }> {
  const responses = Array.from({ length: steps }, (_, i) => ({ text: `step ${i}`, tool_calls: [{ name: 'add', arguments: { a: i, b: 1 } }] }));
  const server = createServer({
    debug: true,
    runtime: { engine: createScriptedEngine({ responses: [...responses, { text: 'done' }] }), tools: [add], maxIterations: steps + 5, pauseTimeoutMs: 600_000 },
  });
  await new Promise<void>((done) => server.http.listen(0, '127.0.0.1', done));
  return { port: (server.http.address() as AddressInfo).port, close: () => server.close() };
}

if (parentPort) {
  const port = parentPort;
  port.once('message', async ({ steps }: { steps: number }) => {
    const server = await startAgUiBenchServer(steps);
    port.on('message', async (message: unknown) => {
      if (message !== 'close') return;
      await server.close();
      port.postMessage('closed');
    });
    port.postMessage({ port: server.port });
  });
}
