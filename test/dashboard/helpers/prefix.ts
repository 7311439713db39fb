import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createScriptedEngine, type Script } from '../../../src/engines/scripted.js';
import { createServer, type StepwiseServer } from '../../../src/server/app.js';
import { createTestTools } from '../../helpers/server-harness.js';

/** The host application's own page, beside stepwise. */
export const HOST_PAGE = 'the host application';

export interface PrefixedServer {
  /** The host application's origin; stepwise is at `${url}${prefix}/`. */
  readonly url: string;
  readonly stepwise: StepwiseServer;
  close(): Promise<void>;
}

/**
 * stepwise's app mounted at `prefix` in a host application's express app, on the host's own http server:
 * requests under the prefix reach stepwise's routes and dashboard with the prefix taken off (express does
 * that for a mounted app), and a WebSocket upgrade for `${prefix}/…` is handed to stepwise's upgrade
 * listener with the prefix taken off its URL; any other upgrade is refused. The scripted engine and the
 * test tools, debug mode on.
 *
 * A stand-in: it is replaced by the mountable server (`createStepwiseServer`'s `router` and `attach`,
 * issue 23) when that lands.
 */
export async function startUnderPrefix(prefix: string, script: Script): Promise<PrefixedServer> {
  const stepwise = createServer({ debug: true, runtime: { engine: createScriptedEngine(script), tools: createTestTools(), pauseTimeoutMs: 120_000 } });
  const host = express();
  host.get('/', (_req, res) => {
    res.type('text/plain').send(HOST_PAGE);
  });
  host.use(prefix, stepwise.app);
  const http: Server = createHttpServer(host);
  http.on('upgrade', (req, socket, head) => {
    if (!req.url?.startsWith(`${prefix}/`)) {
      socket.destroy();
      return;
    }
    req.url = req.url.slice(prefix.length);
    stepwise.http.emit('upgrade', req, socket, head);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stepwise,
    close: async () => {
      await stepwise.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
