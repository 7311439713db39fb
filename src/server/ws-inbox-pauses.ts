import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { filter, fromEvent, takeUntil } from 'rxjs';
import type { WebSocket, WebSocketServer } from 'ws';
import type { PauseFeedFrame } from '../core/directory.js';
import { callerOf, isOriginAllowed, mayAccess, type Caller, type TokenTable } from './auth.js';
import type { ServerContext } from './context.js';
import { committedOnly } from './commands.js';
import { inboxPauses, MAX_INBOX_LIMIT } from './routes-inbox.js';
import { pongFrame } from './ws-control.js';
import { CLOSE_INTERNAL_ERROR, type ForwarderConfig } from './ws-forwarder.js';
import { createWsClients } from './ws-clients.js';
import { createInboxFactory } from './ws-inbox.js';
import { createOutboxFactory } from './ws-outbox.js';
import { ignoreClientError, refuse, type Refusal } from './ws-upgrade.js';

export interface PausesSocketConfig {
  readonly context: ServerContext;
  readonly wss: WebSocketServer;
  readonly tokens: TokenTable;
  readonly allowedOrigins: readonly string[];
  /** Send budget and message rate, as the conversation socket's. */
  readonly limits: ForwarderConfig;
}

/** The inbox socket's clients (docs/protocol.md, The inbox). */
export interface PausesSocket {
  /** Serves an upgrade for the inbox socket's path: checks it, then streams. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Closes every client with 1001. Idempotent. */
  dispose(): void;
}

/**
 * `GET /ws/pauses[?access_token=…]`: `ws.hello` with every pending pause the caller may answer, then the
 * `debugger.pause` and `debugger.resume` frames of all those conversations, live. Auth and origin are
 * checked before the upgrade; a slow or hostile client is closed as on the conversation socket.
 */
export function createPausesSocket(config: PausesSocketConfig): PausesSocket {
  const outboxOf = createOutboxFactory(config.limits);
  const listen = createInboxFactory(config.limits);
  const clients = createWsClients();

  const attach = (ws: WebSocket, socket: Duplex, { caller, limit }: Joining): void => {
    if (!clients.admit(ws)) return;
    const outbox = outboxOf(ws, socket);
    listen(ws, () => outbox.send(pongFrame()));
    // Followed before the pending pauses are listed, so nothing between the two is missed; what
    // arrives meanwhile waits, and a pause the listing already has is not sent twice.
    let held: PauseFeedFrame[] | undefined = [];
    config.context.directory.pauseFrames$
      .pipe(
        filter((frame) => mayAccess(caller, frame.owner)),
        takeUntil(fromEvent(ws, 'close')),
      )
      .subscribe((frame) => (held ? held.push(frame) : outbox.send(frame.text)));
    // Listed once committed, as `GET /pauses` lists them: a pause an approver sees survives a crash.
    // One more than the limit: whether the list was cut is known, not guessed.
    const asked = limit === undefined ? {} : { limit: limit + 1 };
    const listing = inboxPauses(config.context, caller, asked).then((pending) => committedOnly(config.context, pending));
    listing.then(
      (found) => {
        const pending = limit === undefined ? found : found.slice(0, limit);
        const truncated = pending.length < found.length ? { truncated: true } : {};
        outbox.send(JSON.stringify({ sem: true, event: { type: 'ws.hello', id: `ws.hello:${Date.now()}`, server_time: Date.now(), pending_pauses: pending, ...truncated } }));
        const listed = new Set(pending.map((pause) => pause.pause_id));
        const waiting = held ?? [];
        held = undefined;
        for (const frame of waiting) if (!isListedPause(frame.text, listed)) outbox.send(frame.text);
      },
      () => ws.close(CLOSE_INTERNAL_ERROR, 'the pending pauses could not be read; reconnect'),
    );
  };

  return {
    upgrade: (req, socket, head) => {
      socket.on('error', () => socket.destroy());
      const checked = check(config, req);
      if ('status' in checked) {
        refuse(socket, checked);
        return;
      }
      config.wss.handleUpgrade(req, socket, head, (ws) => {
        // ws has already closed the socket with its code (1009, 1007, 1002) when it emits this.
        ws.on('error', ignoreClientError);
        attach(ws, socket, checked);
      });
    },
    dispose: () => void clients.stop(),
  };
}

/** Who joins the inbox socket, and how many pending pauses its hello may list (all, when undefined). */
interface Joining {
  readonly caller: Caller;
  readonly limit: number | undefined;
}

function check(config: PausesSocketConfig, req: IncomingMessage): Refusal | Joining {
  if (!isOriginAllowed(req, config.allowedOrigins)) {
    return { status: 403, code: 'forbidden_origin', message: `origin ${String(req.headers.origin)} is not allowed` };
  }
  const url = new URL(req.url ?? '/', 'http://localhost');
  const caller = callerOf(config.tokens, req, url.searchParams.get('access_token'));
  if (!caller) return { status: 401, code: 'unauthorized', message: 'a valid bearer token or ?access_token= is required' };
  const limit = url.searchParams.get('limit');
  if (limit === null) return { caller, limit: undefined };
  const count = /^[0-9]{1,5}$/.test(limit) ? Number(limit) : 0;
  if (count < 1 || count > MAX_INBOX_LIMIT) return { status: 400, code: 'invalid_request', message: `limit must be 1 to ${MAX_INBOX_LIMIT}` };
  return { caller, limit: count };
}

/** Whether a held frame is the `debugger.pause` of a pause `ws.hello` already listed (parsed only while joining). */
function isListedPause(text: string, listed: ReadonlySet<string>): boolean {
  const event = (JSON.parse(text) as { event?: { type?: unknown; pause_id?: unknown } }).event;
  return event?.type === 'debugger.pause' && typeof event.pause_id === 'string' && listed.has(event.pause_id);
}
