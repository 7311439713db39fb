import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createScriptedEngine, type Script } from '../../../src/engines/scripted.js';
import { createStepwise, type Stepwise } from '../../../src/sessions/runtime.js';
import { createStepwiseServer } from '../../../src/server/stepwise-server.js';
import { createTestTools } from '../../helpers/server-harness.js';

/** The host application's own page, beside stepwise. */
export const HOST_PAGE = 'the host application';

export interface PrefixedServer {
  /** The host application's origin; stepwise is at `${url}${prefix}/`. */
  readonly url: string;
  readonly stepwise: Stepwise;
  close(): Promise<void>;
}

/**
 * stepwise mounted at `prefix` in a host application's express app, on the host's own http server, as
 * docs/library.md shows it: `createStepwiseServer`'s router under the prefix and its WebSocket attached
 * at `${prefix}/ws`. The scripted engine and the test tools, debug mode on.
 */
export async function startUnderPrefix(prefix: string, script: Script): Promise<PrefixedServer> {
  const stepwise = createStepwise({ engine: createScriptedEngine(script), tools: createTestTools(), pauseTimeoutMs: 120_000 });
  const mounted = createStepwiseServer(stepwise, { debug: true });
  const host = express();
  host.get('/', (_req, res) => {
    res.type('text/plain').send(HOST_PAGE);
  });
  host.use(prefix, mounted.router);
  const http: Server = createHttpServer(host);
  mounted.attach(http, { path: `${prefix}/ws` });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stepwise,
    close: async () => {
      stepwise.dispose();
      await mounted.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
