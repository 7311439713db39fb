import type { Server } from 'node:http';
import type { NextFunction, Request, Response, Router } from 'express';
import { loadExpress, loadWs } from './server-deps.js';
import type { Stepwise } from '../sessions/runtime.js';
import type { Store } from '../core/store.js';
import { StoreError } from '../core/store-errors.js';
import { requireCaller, type TokenTable } from './auth.js';
import { createCommandHandler, type StepCommand } from './commands.js';
import type { ServerContext } from './context.js';
import { HttpError, sendError, tryAgain } from './errors.js';
import { createFrameEncoder } from './frame-encoder.js';
import { createProfileTable, type Profile } from './profiles.js';
import { cancelRun, chatRoutes } from './routes-chat.js';
import { conversationRoutes } from './routes-conversations.js';
import { continuePause, debugRoutes, disableStep, enableStep } from './routes-debug.js';
import { decisionRoutes } from './routes-decisions.js';
import { grantRoutes } from './routes-grants.js';
import { forkRoutes } from './routes-fork.js';
import { inboxRoutes } from './routes-inbox.js';
import { inferenceRoutes } from './routes-inferences.js';
import { profileRoutes } from './routes-profiles.js';
import { toolRoutes, type ToolSource } from './routes-tools.js';
import { agUiRoutes } from './ag-ui/routes-ag-ui.js';
import { aiSdkRoutes } from './ai-sdk/routes-ai-sdk.js';
import { dashboardRoutes } from './static.js';
import { createWsForwarder } from './ws-forwarder.js';
import { createPausesSocket } from './ws-inbox-pauses.js';
import { createUpgradeHandler } from './ws-upgrade.js';
import { createWebhooks, type Webhooks } from './webhooks/webhooks.js';
import type { WebhooksConfig } from './webhooks/webhooks-config.js';

/** What `stepwise serve` takes for its server (docs/library.md, A server inside your app). */
export interface StepwiseServerOptions {
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
  /** Where decisions are read from (the audit trail). Default the runtime's store, which every decision is written to. */
  readonly store?: Store;
  /** Where each tool comes from, by name, for `GET /tools` (`tools-file`, `mcp:<server>`). Default: all `built-in`. */
  readonly toolSources?: ReadonlyMap<string, ToolSource>;
  /** Told about every unexpected (500) error, e.g. to log it. */
  readonly onError?: (error: unknown) => void;
  /** Webhooks told of pauses, with signed links to answer them (docs/protocol.md, Webhooks and signed links). Default none. */
  readonly webhooks?: WebhooksConfig;
  /**
   * The URL approvers reach this server at, under which links are made (`<publicUrl>/a/<token>`), e.g.
   * `https://agent.example.com/agent`. Default: the attached server's own address and mount path.
   */
  readonly publicUrl?: string;
  /** Told about each failed webhook try (a line without secrets), e.g. to log it. Default: nowhere. */
  readonly onWebhookFailure?: (message: string) => void;
}

export interface AttachOptions {
  /** The conversation socket's path on the app's server, e.g. `/agent/ws`. Default `/ws`. */
  readonly path?: string;
  /**
   * What to do with an upgrade for another path: leave it to the app's other listeners (default), or
   * refuse it with 404 (a server that has no other WebSocket endpoints).
   */
  readonly others?: 'leave' | 'refuse';
}

/** Stepwise's routes, dashboard and WebSocket, to mount in an application (docs/library.md). */
export interface StepwiseServer {
  /** Every route and the dashboard, relative to where the app mounts it (`app.use('/agent', router)`). */
  readonly router: Router;
  /** Serves the WebSocket endpoint on the app's own server (`ws` `noServer` + `handleUpgrade`). */
  attach(server: Server, options?: AttachOptions): void;
  /** Closes every socket (after what is pending is written) and stops serving. The runtime stays the caller's. Idempotent. */
  close(): Promise<void>;
}

const BODY_LIMIT = 1024 * 1024;

/** The commands a run's owner serves, by route (docs/protocol.md, Several instances). */
const STEP_COMMANDS: Readonly<Record<string, StepCommand>> = Object.freeze({
  '/chat/cancel': cancelRun,
  '/debug/step/enable': enableStep,
  '/debug/step/disable': disableStep,
  '/debug/continue': continuePause,
});

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
  ['/grants', 'GET'],
  ['/grants/:grant_id', 'DELETE'],
  ['/pauses', 'GET'],
  ['/healthz', 'GET'],
  ['/ag-ui', 'POST'],
  ['/ag-ui/:profile', 'POST'],
  ['/ai-sdk/chat', 'POST'],
];

/**
 * The server of a runtime, built from the runtime's ports (commands, directory, frames), so it is
 * the same on one process or on an instance of a service. `stepwise serve` is made of exactly this.
 */
export function createStepwiseServer(stepwise: Stepwise, options: StepwiseServerOptions = {}): StepwiseServer {
  // Subscribed before any client, so it sees every committed frame first and in hub order.
  const encoder = createFrameEncoder(stepwise.frames.events$, stepwise.store);
  const handler = createCommandHandler(() => context, STEP_COMMANDS, options.onError);
  const context: ServerContext = {
    stepwise,
    encoder,
    debug: options.debug ?? false,
    profiles: createProfileTable(options.profiles ?? [], stepwise.registry.names()),
    commands: stepwise.commands(handler),
    directory: stepwise.directory,
  };
  const tokens: TokenTable = options.tokens ?? new Map();
  let attached: { readonly server: Server; readonly path: string } | undefined;
  const webhooks = options.webhooks && createWebhooks(stepwise, options.webhooks, { baseUrl: () => options.publicUrl ?? baseUrlOf(attached), ...(options.onWebhookFailure ? { onFailure: options.onWebhookFailure } : {}) });
  const router = buildRouter(context, tokens, options, webhooks);
  // No permessage-deflate: frames are encoded once for every client (see ws-outbox.ts).
  const wss = new (loadWs().WebSocketServer)({ noServer: true, maxPayload: 64 * 1024, perMessageDeflate: false });
  const limits = {
    ...(options.maxClientBufferBytes === undefined ? {} : { maxBufferedBytes: options.maxClientBufferBytes }),
    ...(options.maxClientMessagesPerSecond === undefined ? {} : { maxMessagesPerSecond: options.maxClientMessagesPerSecond }),
  };
  const forwarder = createWsForwarder(stepwise, encoder, limits);
  const allowedOrigins = options.allowedOrigins ?? [];
  const pausesSocket = createPausesSocket({ context, wss, tokens, allowedOrigins, limits });
  let closing: Promise<void> | undefined;
  return {
    router,
    attach: (server, attach = {}) => {
      const path = attach.path ?? '/ws';
      attached ??= { server, path };
      const upgrade = createUpgradeHandler({ context, wss, forwarder, tokens, allowedOrigins, path, others: attach.others ?? 'leave' });
      // The inbox socket lives beside the conversation socket (docs/protocol.md, The inbox).
      const pausesPath = `${path.replace(/\/$/, '')}/pauses`;
      server.on('upgrade', (req, socket, head) => {
        if (new URL(req.url ?? '/', 'http://localhost').pathname === pausesPath) pausesSocket.upgrade(req, socket, head);
        else upgrade(req, socket, head);
      });
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        forwarder.dispose();
        pausesSocket.dispose();
        webhooks?.dispose();
        encoder.dispose();
        const stragglers = setTimeout(() => {
          for (const ws of wss.clients) ws.terminate();
        }, 1000);
        stragglers.unref();
        wss.close(() => resolve());
      });
      return closing;
    },
  };
}

function buildRouter(context: ServerContext, tokens: TokenTable, options: StepwiseServerOptions, webhooks: Webhooks | undefined): Router {
  const express = loadExpress();
  const router = express.Router();
  router.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  // The dashboard's URLs are relative to its page: mounted at `/agent`, the page must be `/agent/`.
  router.get('/', (req, res, next) => {
    const [path, query] = splitQuery(req.originalUrl);
    if (path.endsWith('/')) return next();
    res.redirect(301, `${path}/${query}`);
  });
  router.use(dashboardRoutes(options.dashboardDir));
  router.use(['/chat', '/conversations', '/hydrate', '/debug', '/profiles', '/tools', '/grants', '/pauses', '/ag-ui', '/ai-sdk'], requireCaller(tokens));
  router.use(loadExpress().json({ limit: BODY_LIMIT }));
  const store = options.store ?? context.stepwise.store;
  router.use(chatRoutes(context), conversationRoutes(context), decisionRoutes(context, store), debugRoutes(context), profileRoutes(context));
  router.use(forkRoutes(context), inferenceRoutes(context, context.stepwise.inferences), toolRoutes(context, options.toolSources ?? new Map()), grantRoutes(context));
  router.use(inboxRoutes(context), agUiRoutes(context), aiSdkRoutes(context));
  if (webhooks) router.use(webhooks.routes(context));
  router.get(['/ws', '/ws/pauses'], (req) => {
    throw new HttpError(426, 'upgrade_required', `GET ${req.path} is a WebSocket endpoint: send an Upgrade request`);
  });
  for (const [path, method] of webhooks ? [...ROUTES, LINK_ROUTE] : ROUTES) {
    router.all(path, (_req, res) => {
      res.setHeader('Allow', method === 'GET' ? 'GET, HEAD' : method);
      throw new HttpError(405, 'method_not_allowed', `${path} accepts ${method} only`);
    });
  }
  router.use((req) => {
    throw new HttpError(404, 'not_found', `no route ${req.method} ${req.path}`);
  });
  router.use(errorHandler(options.onError));
  return router;
}

/** The signed links' route, served only with webhooks (docs/protocol.md, Webhooks and signed links). */
const LINK_ROUTE = ['/a/:token', 'GET, HEAD, POST'] as const;

/** The server's own URL as links name it when no public URL is given: its address and mount path. */
function baseUrlOf(attached: { readonly server: Server; readonly path: string } | undefined): string {
  const address = attached?.server.address();
  if (!attached || !address || typeof address === 'string') return '';
  const host = address.address === '::' || address.address === '0.0.0.0' ? 'localhost' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}${attached.path.replace(/\/?ws\/?$/, '')}`;
}

const splitQuery = (url: string): [string, string] => {
  const at = url.indexOf('?');
  return at === -1 ? [url, ''] : [url.slice(0, at), url.slice(at)];
};

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
