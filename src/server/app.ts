import { createServer as createHttpServer, type Server } from 'node:http';
import express, { type Express } from 'express';
import { createStepwise, type Stepwise, type StepwiseConfig } from '../sessions/runtime.js';
import { LeaseLostError } from '../core/store-errors.js';
import type { InferenceLogConfig } from '../sessions/inference-log.js';
import { createStepwiseServer, type StepwiseServerOptions } from './stepwise-server.js';

export interface ServerOptions extends StepwiseServerOptions {
  /**
   * The runtime this server owns (engine, tools, step settings, store); it is disposed with the
   * server. A service's store (Redis) makes it one instance of that service (docs/protocol.md, Several instances).
   */
  readonly runtime: StepwiseConfig;
  /** How many requests sent to the model are kept for `GET /conversations/:id/inferences/:message_id`. */
  readonly inferenceLog?: InferenceLogConfig;
}

export interface StepwiseHttpServer {
  readonly app: Express;
  /** Not listening yet: the caller (the CLI, a test) calls `listen`. */
  readonly http: Server;
  readonly stepwise: Stepwise;
  /** Stops accepting, cancels every run, closes every socket. Idempotent. */
  close(): Promise<void>;
}

/**
 * A whole server of its own, as `stepwise serve` runs it: a runtime, and the mountable server
 * (./stepwise-server.ts) at the root of an express app on one http server. Reads no env, never listens.
 */
export function createServer(options: ServerOptions): StepwiseHttpServer {
  // A frame refused by the fence is no error of this server's: its run already stopped here (the service logs it).
  const onFrameError = options.onError && ((error: unknown) => void (error instanceof LeaseLostError || options.onError?.(error)));
  const stepwise = createStepwise({
    ...(onFrameError ? { onFrameError } : {}),
    ...(options.inferenceLog ? { inferenceLog: options.inferenceLog } : {}),
    ...options.runtime,
  });
  const server = createStepwiseServer(stepwise, options);
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(server.router);
  const http = createHttpServer(app);
  server.attach(http, { path: '/ws', others: 'refuse' });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      // Runs end first, so their `run.end` frames are flushed before the sockets close.
      stepwise.dispose();
      void server.close();
      http.close(() => resolve());
      http.closeIdleConnections();
      setTimeout(() => http.closeAllConnections(), 1000).unref();
    });
    return closing;
  };
  return { app, http, stepwise, close };
}
