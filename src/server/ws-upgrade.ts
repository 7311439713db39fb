import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocketServer } from 'ws';
import { callerOf, isOriginAllowed, mayAccess, type TokenTable } from './auth.js';
import { CONV_ID, type ServerContext } from './context.js';
import { errorBody } from './errors.js';
import type { WsForwarder } from './ws-forwarder.js';

export interface UpgradeConfig {
  readonly context: ServerContext;
  readonly wss: WebSocketServer;
  readonly forwarder: WsForwarder;
  readonly tokens: TokenTable;
  readonly allowedOrigins: readonly string[];
  /** The conversation socket's path on the server (`/ws`, or `/agent/ws` when mounted under a prefix). */
  readonly path: string;
  /** An upgrade for another path: left to the server's other listeners, or refused with 404. */
  readonly others: 'leave' | 'refuse';
}

export type Refusal = { readonly status: number; readonly code: string; readonly message: string };

/**
 * `GET /ws?conv_id=…[&since_seq=N][&access_token=…]`: every check runs before the upgrade, so a
 * refused client gets a plain HTTP status and JSON body and never a socket.
 */
export function createUpgradeHandler(config: UpgradeConfig) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    // Another endpoint of the application's: not ours to answer.
    if (url.pathname !== config.path && config.others === 'leave') return;
    // A client that resets its connection must cost only that connection, before and after the upgrade.
    socket.on('error', () => socket.destroy());
    const upgrade = (): void => {
      const checked = check(config, req, url);
      if ('status' in checked) {
        refuse(socket, checked);
        return;
      }
      config.wss.handleUpgrade(req, socket, head, (ws) => {
        // What ws's Receiver refuses (a message over maxPayload, invalid UTF-8, a protocol error) it
        // has already answered by closing with 1009, 1007 or 1002 (docs/protocol.md "WebSocket") when
        // it emits 'error': without a listener that event would be thrown and end the process.
        ws.on('error', ignoreClientError);
        const session = config.context.stepwise.sessions.open({ conv_id: checked.convId, ...(checked.user ? { owner: checked.user } : {}) });
        config.forwarder.attach(ws, socket, { session, ...(checked.sinceSeq === undefined ? {} : { sinceSeq: checked.sinceSeq }) });
      });
    };
    // With several instances, a conversation another one created is brought here first (docs/protocol.md, Several
    // instances).
    const convId = url.searchParams.get('conv_id');
    if (convId === null || !CONV_ID.test(convId)) {
      upgrade();
      return;
    }
    config.context.directory.open(convId).then(upgrade, () =>
      refuse(socket, { status: 503, code: 'store_unavailable', message: 'the store cannot be reached; try again' }),
    );
  };
}

/** A client's own fault, already answered by ws with a close code: nothing for the server to log. */
export function ignoreClientError(): void {}

type Accepted = { readonly convId: string; readonly sinceSeq?: number; readonly user: string | undefined };

function check(config: UpgradeConfig, req: IncomingMessage, url: URL): Refusal | Accepted {
  if (url.pathname !== config.path) return { status: 404, code: 'not_found', message: `no WebSocket endpoint at ${url.pathname}` };
  if (!isOriginAllowed(req, config.allowedOrigins)) {
    return { status: 403, code: 'forbidden_origin', message: `origin ${String(req.headers.origin)} is not allowed` };
  }
  const caller = callerOf(config.tokens, req, url.searchParams.get('access_token'));
  if (!caller) return { status: 401, code: 'unauthorized', message: 'a valid bearer token or ?access_token= is required' };
  const convIds = url.searchParams.getAll('conv_id');
  const convId = convIds[0];
  if (convIds.length !== 1 || convId === undefined || !CONV_ID.test(convId)) {
    return { status: 400, code: 'invalid_request', message: 'conv_id must match [A-Za-z0-9_-]{1,128}' };
  }
  const since = url.searchParams.get('since_seq');
  if (since !== null && !/^\d{1,15}$/.test(since)) {
    return { status: 400, code: 'invalid_request', message: 'since_seq must be a non-negative integer' };
  }
  const existing = config.context.stepwise.sessions.get(convId);
  if (existing && !mayAccess(caller, existing.owner)) {
    return { status: 403, code: 'forbidden', message: `conversation "${convId}" belongs to another user` };
  }
  return { convId, user: caller.user, ...(since === null ? {} : { sinceSeq: Number(since) }) };
}

/** Answers an upgrade with a plain HTTP status and the JSON error body, never a socket. */
export function refuse(socket: Duplex, refusal: Refusal): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(errorBody(refusal.code, refusal.message));
  const reason = STATUS_CODES[refusal.status] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${refusal.status} ${reason}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
