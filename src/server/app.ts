import { createServer as createHttpServer, type Server } from 'node:http';
import express, { type Express, type NextFunction, type Request, type Response, type Router } from 'express';
import { WebSocketServer } from 'ws';
import { createStepwise, type Stepwise, type StepwiseConfig } from '../sessions/runtime.js';
import { requireCaller, type TokenTable } from './auth.js';
import type { ServerContext } from './context.js';
import { HttpError, sendError, tryAgain } from './errors.js';
import { LeaseLostError, StoreError } from '../core/store-errors.js';
import { createFrameEncoder } from './frame-encoder.js';
import { cancelRun, chatRoutes } from './routes-chat.js';
import { conversationRoutes } from './routes-conversations.js';
import { continuePause, debugRoutes, disableStep, enableStep } from './routes-debug.js';
import { decisionRoutes } from './routes-decisions.js';
import { forkRoutes } from './routes-fork.js';
import { createInferenceLog, type InferenceLogConfig } from './inference-log.js';
import { inferenceRoutes } from './routes-inferences.js';
import { toolRoutes, type ToolSource } from './routes-tools.js';
import { agUiRoutes } from './ag-ui/routes-ag-ui.js';
import { aiSdkRoutes } from './ai-sdk/routes-ai-sdk.js';
import type { Store } from '../core/store.js';
import { joinCluster, type ClusterConfig, type ClusterRuntime } from '../cluster/index.js';
import { createProfileTable, type Profile } from './profiles.js';
import { createLocalCommands } from '../core/commands.js';
import { createLocalDirectory } from '../sessions/directory.js';
import type { RunOwnership } from '../core/ownership.js';
import { createCommandHandler, type StepCommand } from './commands.js';
import { profileRoutes } from './routes-profiles.js';
import { dashboardRoutes } from './static.js';
import { createWsForwarder } from './ws-forwarder.js';
import { createUpgradeHandler } from './ws-upgrade.js';

export interface ServerOptions {
  /** The runtime this server owns (engine, tools, step settings); it is disposed with the server. */
  readonly runtime: StepwiseConfig;
  /** Debug mode: the `/debug/*` routes and step mode. Default off. */
  readonly debug?: boolean;
  /** token → user. Default none: single-user, no token needed. */
  readonly tokens?: TokenTable;
  /** Browser origins allowed on the WebSocket besides the server's own. Default none. */
  readonly allowedOrigins?: readonly string[];
  /** A WebSocket client's send budget before it is closed with 1013. Default 8 MiB. */
  readonly maxClientBufferBytes?: number;
  /** Messages (pings, pongs) a WebSocket client may send a second before it is closed with 1008. Default 50. */
  readonly maxClientMessagesPerSecond?: number;
  /** The dashboard's static folder. Default `src/dashboard`, found from this module. */
  readonly dashboardDir?: string;
  /** Profiles for `POST /chat/:profile` and `GET /profiles` (docs/protocol.md, Profiles file). Default none. */
  readonly profiles?: readonly Profile[];
  /**
   * Where decisions are read from (the audit trail). Default the runtime's store (`runtime.store`),
   * which every decision is written to.
   */
  readonly store?: Store;
  /**
   * The store this instance shares with the other instances of one service (docs/protocol.md, Several instances;
   * `--store redis`): clients then follow every conversation wherever it runs. Default none: a service of one
   * process.
   */
  readonly cluster?: ClusterConfig;
  /** Where each tool comes from, by name, for `GET /tools` (`tools-file`, `mcp:<server>`). Default: all `built-in`. */
  readonly toolSources?: ReadonlyMap<string, ToolSource>;
  /** How many requests sent to the model are kept for `GET /conversations/:id/inferences/:message_id`. */
  readonly inferenceLog?: InferenceLogConfig;
  /** Told about every unexpected (500) error, e.g. to log it. */
  readonly onError?: (error: unknown) => void;
}

export interface StepwiseServer {
  readonly app: Express;
  /** Not listening yet: the caller (the CLI, a test) calls `listen`. */
  readonly http: Server;
  readonly stepwise: Stepwise;
  /** Stops accepting, cancels every run, closes every socket. Idempotent. */
  close(): Promise<void>;
}

const BODY_LIMIT = 1024 * 1024;

/** Which methods each route answers; any other method gets 405 with `Allow`. */
const ROUTES: readonly (readonly [string, string])[] = [
  ['/chat', 'POST'],
  ['/chat/cancel', 'POST'],
  ['/chat/:profile', 'POST'],
  ['/profiles', 'GET'],
  ['/conversations', 'GET'],
  ['/conversations/:conv_id', 'GET'],
  ['/conversations/:conv_id/decisions', 'GET'],
  ['/conversations/:conv_id/fork', 'POST'],
  ['/conversations/:conv_id/inferences', 'GET'],
  ['/conversations/:conv_id/inferences/:message_id', 'GET'],
  ['/tools', 'GET'],
  ['/hydrate', 'GET'],
  ['/debug/step/enable', 'POST'],
  ['/debug/step/disable', 'POST'],
  ['/debug/continue', 'POST'],
  ['/debug/pauses', 'GET'],
  ['/healthz', 'GET'],
  ['/ag-ui', 'POST'],
  ['/ag-ui/:profile', 'POST'],
  ['/ai-sdk/chat', 'POST'],
];

/** Builds the express app and the WebSocket server on one http server; reads no env, never listens. */
export function createServer(options: ServerOptions): StepwiseServer {
  // What each engine received, around every other middleware (see inference-log.ts).
  const inferences = createInferenceLog(options.inferenceLog);
  const middlewares = [inferences.name, ...(options.runtime.middlewares ?? []), inferences.capture];
  // A frame the store cannot commit reaches no client (docs/protocol.md, Durability): the server's error log says so.
  // The cluster's ownership is the runtime's port, chosen here like a store: it exists once the
  // runtime it joins does, and is asked only once runs start.
  let joined: ClusterRuntime | undefined;
  const ownership: RunOwnership = { claim: (convId) => (joined ? joined.ownership.claim(convId) : Promise.resolve(true)) };
  // A frame refused by the fence is no error of this server's: its run already stopped here (the cluster logs it).
  const onFrameError = options.onError && ((error: unknown) => void (error instanceof LeaseLostError || options.onError?.(error)));
  const local = createStepwise({ ...(onFrameError ? { onFrameError } : {}), ...options.runtime, middlewares, ownership });
  joined = options.cluster ? joinCluster(local, options.cluster) : undefined;
  const stepwise = joined?.stepwise ?? local;
  // Subscribed before any client, so it sees every committed frame first and in hub order.
  const encoder = createFrameEncoder(stepwise.frames.events$, stepwise.store);
  const profiles = createProfileTable(options.profiles ?? [], stepwise.registry.names());
  const handler = createCommandHandler(() => context, STEP_COMMANDS, options.onError);
  const commands = joined ? joined.commands(handler) : createLocalCommands(handler, (pauseId) => stepwise.controller.convOf(pauseId));
  const directory = joined ? joined.directory : createLocalDirectory(stepwise);
  const context: ServerContext = { stepwise, encoder, debug: options.debug ?? false, profiles, commands, directory };
  const tokens: TokenTable = options.tokens ?? new Map();
  const http = createHttpServer();
  const extra = [inferenceRoutes(context, inferences), toolRoutes(context, options.toolSources ?? new Map()), agUiRoutes(context), aiSdkRoutes(context)];
  const app = buildApp(context, tokens, options, extra);
  http.on('request', app);
  // No permessage-deflate: frames are encoded once for every client (see ws-outbox.ts).
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024, perMessageDeflate: false });
  const forwarder = createWsForwarder(stepwise, encoder, {
    ...(options.maxClientBufferBytes === undefined ? {} : { maxBufferedBytes: options.maxClientBufferBytes }),
    ...(options.maxClientMessagesPerSecond === undefined ? {} : { maxMessagesPerSecond: options.maxClientMessagesPerSecond }),
  });
  http.on('upgrade', createUpgradeHandler({ context, wss, forwarder, tokens, allowedOrigins: options.allowedOrigins ?? [] }));

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      // Runs end first, so their `run.end` frames are flushed before the sockets close.
      stepwise.dispose();
      forwarder.dispose();
      encoder.dispose();
      const stragglers = setTimeout(() => {
        for (const ws of wss.clients) ws.terminate();
      }, 1000);
      stragglers.unref();
      wss.close();
      http.close(() => resolve());
      http.closeIdleConnections();
      setTimeout(() => http.closeAllConnections(), 1000).unref();
    });
    return closing;
  };
  return { app, http, stepwise, close };
}

/** The commands a run's owner serves, by route (docs/protocol.md, Several instances). */
const STEP_COMMANDS: Readonly<Record<string, StepCommand>> = Object.freeze({
  '/chat/cancel': cancelRun,
  '/debug/step/enable': enableStep,
  '/debug/step/disable': disableStep,
  '/debug/continue': continuePause,
});

function buildApp(context: ServerContext, tokens: TokenTable, options: ServerOptions, extra: readonly Router[]): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  app.use(dashboardRoutes(options.dashboardDir));
  app.use(['/chat', '/conversations', '/hydrate', '/debug', '/profiles', '/tools', '/ag-ui', '/ai-sdk'], requireCaller(tokens));
  app.use(express.json({ limit: BODY_LIMIT }));
  const store = options.store ?? context.stepwise.store;
  app.use(chatRoutes(context), conversationRoutes(context), decisionRoutes(context, store), debugRoutes(context), profileRoutes(context));
  app.use(forkRoutes(context), ...extra);
  app.get('/ws', () => {
    throw new HttpError(426, 'upgrade_required', 'GET /ws is a WebSocket endpoint: send an Upgrade request');
  });
  for (const [path, method] of ROUTES) {
    app.all(path, (_req, res) => {
      res.setHeader('Allow', method === 'GET' ? 'GET, HEAD' : method);
      throw new HttpError(405, 'method_not_allowed', `${path} accepts ${method} only`);
    });
  }
  app.use((req) => {
    throw new HttpError(404, 'not_found', `no route ${req.method} ${req.path}`);
  });
  app.use(errorHandler(options.onError));
  return app;
}

function errorHandler(onError: ((error: unknown) => void) | undefined) {
  return (error: unknown, _req: Request, res: Response, _next: NextFunction): void => {
    sendError(res, toHttpError(error, onError));
  };
}

/** body-parser's failures keep their meaning: 413 too large, 400 malformed JSON; the rest is a 500. */
function toHttpError(error: unknown, onError: ((error: unknown) => void) | undefined): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof StoreError && error.code === 'store_unavailable') return tryAgain('store_unavailable', 'the store cannot be reached; try again');
  const { type, status } = (error ?? {}) as { type?: unknown; status?: unknown };
  if (type === 'entity.too.large') return new HttpError(413, 'payload_too_large', `the body is over ${BODY_LIMIT} bytes`);
  if (type === 'entity.parse.failed') return new HttpError(400, 'invalid_json', 'the body is not valid JSON');
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new HttpError(status, 'bad_request', error instanceof Error ? error.message : 'bad request');
  }
  onError?.(error);
  return new HttpError(500, 'internal', 'internal server error');
}
