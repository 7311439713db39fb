import type { NextFunction, Request, Response, Router } from 'express';
import { isTextTooDeep, TOO_DEEP, TOO_DEEP_MESSAGE } from '../core/json-bounds.js';
import { StoreError } from '../core/store-errors.js';
import { requireCaller, type TokenTable } from './auth.js';
import { createHostGuard, denyFraming, requireAllowedHost } from './browser-guards.js';
import type { ServerContext } from './context.js';
import { HttpError, sendError, tryAgain } from './errors.js';
import { chatRoutes } from './routes-chat.js';
import { conversationRoutes } from './routes-conversations.js';
import { debugRoutes } from './routes-debug.js';
import { decisionRoutes } from './routes-decisions.js';
import { forkRoutes } from './routes-fork.js';
import { grantRoutes } from './routes-grants.js';
import { inboxRoutes } from './routes-inbox.js';
import { inferenceRoutes } from './routes-inferences.js';
import { profileRoutes } from './routes-profiles.js';
import { toolRoutes } from './routes-tools.js';
import { agUiRoutes } from './ag-ui/routes-ag-ui.js';
import { aiSdkRoutes } from './ai-sdk/routes-ai-sdk.js';
import { loadExpress } from './server-deps.js';
import { dashboardRoutes } from './static.js';
import type { StepwiseServerOptions } from './server-options.js';
import type { Webhooks } from './webhooks/webhooks.js';

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
  ['/grants', 'GET'],
  ['/grants/:grant_id', 'DELETE'],
  ['/pauses', 'GET'],
  ['/pauses/:pause_id', 'POST'],
  ['/healthz', 'GET'],
  ['/ag-ui', 'POST'],
  ['/ag-ui/:profile', 'POST'],
  ['/ai-sdk/chat', 'POST'],
];

/** Every route and the dashboard of a server, with 405 for a wrong method, 404 for no route, errors as JSON. */
export function buildRouter(context: ServerContext, tokens: TokenTable, options: StepwiseServerOptions, webhooks: Webhooks | undefined): Router {
  const express = loadExpress();
  const router = express.Router();
  // First, so that every reply, refusals and 404s included, carries them (docs/protocol.md, Browsers).
  router.use(denyFraming(), requireAllowedHost(createHostGuard(tokens, options.allowedHosts)));
  router.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  // The dashboard's URLs are relative to its page: mounted at `/agent`, the page must be `/agent/`.
  router.get('/', (req, res, next) => {
    const [path, query] = splitQuery(req.originalUrl);
    if (path.endsWith('/')) return next();
    res.redirect(301, `${path}/${query}`);
  });
  router.use(['/chat', '/conversations', '/hydrate', '/debug', '/profiles', '/tools', '/grants', '/pauses', '/ag-ui', '/ai-sdk'], requireCaller(tokens));
  // Depth is checked on the raw text, before parsing and every other check (docs/protocol.md, Untrusted input).
  router.use(loadExpress().json({ limit: BODY_LIMIT, verify: refuseTooDeep }));
  const store = options.store ?? context.stepwise.store;
  router.use(chatRoutes(context), conversationRoutes(context), decisionRoutes(context, store), debugRoutes(context), profileRoutes(context));
  router.use(forkRoutes(context), inferenceRoutes(context, context.stepwise.inferences), toolRoutes(context, options.toolSources ?? new Map()), grantRoutes(context));
  router.use(inboxRoutes(context), agUiRoutes(context), aiSdkRoutes(context));
  if (webhooks) router.use(webhooks.routes(context));
  // After the API: in front of it, every API GET went through a look on disk for a dashboard file of
  // its path first (a stat per request, a measurable share of an instance's CPU under load).
  router.use(dashboardRoutes(options.dashboardDir));
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

const splitQuery = (url: string): [string, string] => {
  const at = url.indexOf('?');
  return at === -1 ? [url, ''] : [url.slice(0, at), url.slice(at)];
};

/** body-parser's `verify`: a body nested too deeply is refused before it is parsed. */
function refuseTooDeep(_req: unknown, _res: unknown, body: Buffer): void {
  if (isTextTooDeep(body)) throw Object.assign(new Error(TOO_DEEP_MESSAGE), { type: TOO_DEEP });
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
  if (type === TOO_DEEP) return new HttpError(400, TOO_DEEP, `the body is ${TOO_DEEP_MESSAGE}`);
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new HttpError(status, 'bad_request', error instanceof Error ? error.message : 'bad request');
  }
  onError?.(error);
  return new HttpError(500, 'internal', 'internal server error');
}
