import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { TokenTable } from './auth.js';
import { HttpError } from './errors.js';
import type { Refusal } from './ws-upgrade.js';

/**
 * No page of ours may be framed by another site (docs/protocol.md, Browsers): a framed dashboard or
 * link page is one click away from a decision the approver never meant. Set on every reply, JSON
 * included, since a route cannot know whether a browser renders it; the link page narrows the CSP further.
 */
export function denyFraming() {
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Content-Security-Policy', "frame-ancestors 'none'");
    next();
  };
}

/** Names a browser only reaches this machine by: DNS can point any other name here. */
const LOOPBACK_NAMES: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The probes a load balancer or orchestrator calls by whatever name it has for the instance. */
const PROBES: ReadonlySet<string> = new Set(['/healthz', '/livez']);

/** Who may be named in `Host` when the server has no auth tokens. */
export interface HostGuard {
  /** Undefined when the request may go on; else the 403 to answer (HTTP or upgrade). */
  refusalOf(req: IncomingMessage): Refusal | undefined;
}

/**
 * DNS rebinding (docs/protocol.md, Browsers): a page on `evil.example` whose name is re-pointed at
 * 127.0.0.1 reaches a token-less server as same-origin. Its requests still carry `Host: evil.example`,
 * so without tokens only loopback names and the `allowedHosts` pass. With tokens the token is the
 * credential, and a rebinding page has none. Entries without a port allow that name on any port.
 * Throws, naming the entry, on one that is not a host name.
 */
export function createHostGuard(tokens: TokenTable, allowedHosts: readonly string[] = []): HostGuard {
  const listed = new Set(allowedHosts.map(normalizedEntry));
  return {
    refusalOf: (req) => {
      if (tokens.size > 0) return undefined;
      const host = (req.headers.host ?? '').trim().toLowerCase();
      const name = nameOf(host);
      if (LOOPBACK_NAMES.has(name) || listed.has(name) || listed.has(host)) return undefined;
      return { status: 403, code: 'host_not_allowed', message: `Host "${host.slice(0, 256)}" is not allowed: use localhost, or list it in --allowed-hosts` };
    },
  };
}

/** Express guard: the probes always pass (they answer nothing a page could use). */
export function requireAllowedHost(guard: HostGuard) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const refusal = (req.method === 'GET' || req.method === 'HEAD') && PROBES.has(req.path) ? undefined : guard.refusalOf(req);
    if (refusal) throw new HttpError(refusal.status, refusal.code, refusal.message);
    next();
  };
}

/** `name` of `name[:port]`, `[v6]` of `[v6][:port]`. */
function nameOf(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  const colon = host.lastIndexOf(':');
  return colon === -1 ? host : host.slice(0, colon);
}

function normalizedEntry(entry: string): string {
  const host = entry.trim().toLowerCase();
  if (!/^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(:\d{1,5})?$/.test(host)) throw new Error(`allowedHosts: "${entry}" is not a host name or host:port`);
  return host;
}
