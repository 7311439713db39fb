import { mayAccess as mayUserAccess } from '../core/access.js';
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { HttpError } from './errors.js';

/** token → user name. Empty: the server is single-user and needs no token. */
export type TokenTable = ReadonlyMap<string, string>;

/**
 * Parses `alice:tokenA,bob:tokenB` (the `STEPWISE_AUTH_TOKENS` format; a tokens file may also put
 * one pair per line and `#` comments). Fails on a malformed pair or a token given twice.
 */
export function parseTokens(text: string): Map<string, string> {
  const table = new Map<string, string>();
  const pairs = text
    .split(/[\n,]/)
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '');
  for (const pair of pairs) {
    const at = pair.indexOf(':');
    const user = pair.slice(0, at).trim();
    const token = pair.slice(at + 1).trim();
    if (at <= 0 || user === '' || token === '') throw new Error(`auth tokens: expected "user:token", got "${pair}"`);
    if (table.has(token)) throw new Error(`auth tokens: a token is listed twice (user ${user})`);
    table.set(token, user);
  }
  return table;
}

/**
 * Who is calling: a user name with auth on, undefined when the server is single-user; `by` names who a
 * decision is recorded as taken by when it is not the user (`link`, a signed link's holder).
 */
export type Caller = { readonly user: string | undefined; readonly by?: string };

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The caller of a request, `null` when tokens are configured and none valid was given. */
export function callerOf(tokens: TokenTable, req: IncomingMessage, queryToken?: string | null): Caller | null {
  return callerOfHeader(tokens, req.headers.authorization, queryToken);
}

/** As `callerOf`, from an `Authorization` header's value (a request another instance forwarded keeps it). */
export function callerOfHeader(tokens: TokenTable, header: string | undefined, queryToken?: string | null): Caller | null {
  if (tokens.size === 0) return { user: undefined };
  const token = (typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined) ?? queryToken ?? undefined;
  const user = token === undefined ? undefined : tokens.get(token);
  return user === undefined ? null : { user };
}

/** Express guard for the API routes: 401 without a valid token; the caller lands in `res.locals`. */
export function requireCaller(tokens: TokenTable) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const caller = callerOf(tokens, req);
    if (!caller) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      throw new HttpError(401, 'unauthorized', 'a valid "Authorization: Bearer <token>" header is required');
    }
    res.locals['caller'] = caller;
    next();
  };
}

export function callerFrom(res: Response): Caller {
  return (res.locals['caller'] as Caller | undefined) ?? { user: undefined };
}

/**
 * A browser's `Origin` must be the server's own (same host as the request) or listed; clients that
 * send no `Origin` (CLIs, servers) are not browsers and cannot be used for cross-site hijacking.
 */
export function isOriginAllowed(req: IncomingMessage, allowed: readonly string[]): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  if (allowed.includes('*') || allowed.includes(origin)) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/** Whether `caller` may see a conversation owned by `owner` (single-user servers own everything). */
export function mayAccess(caller: Caller, owner: string | undefined): boolean {
  return mayUserAccess(caller.user, owner);
}
