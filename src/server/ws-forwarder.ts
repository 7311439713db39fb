import type { Duplex } from 'node:stream';
import type { Subscription } from 'rxjs';
import { WebSocket, type RawData } from 'ws';
import type { Session } from '../sessions/session.js';
import type { Stepwise } from '../sessions/runtime.js';
import type { FrameEncoder } from './frame-encoder.js';
import { encodeTextFrame } from './ws-wire.js';

export interface ForwarderConfig {
  /** Bytes a client may have waiting (ours plus the socket's) before it is closed with 1013. Default 8 MiB. */
  readonly maxBufferedBytes?: number;
}

const DEFAULT_FORWARDER_CONFIG = Object.freeze({ maxBufferedBytes: 8 * 1024 * 1024 });

/** SPEC §3: a slow client is told to come back later (and reconnect with `since_seq`). */
export const CLOSE_TRY_AGAIN_LATER = 1013;
export const CLOSE_GOING_AWAY = 1001;

export interface ClientJoin {
  readonly session: Session;
  /** Replay from here; without it the client gets live frames after `ws.hello`'s `last_seq`. */
  readonly sinceSeq?: number;
}

/** Forwards the hub's frames to WebSocket clients, each with a bounded send buffer. */
export interface WsForwarder {
  /** Takes over an upgraded socket: sends `ws.hello`, then (replayed and) live frames. */
  attach(ws: WebSocket, socket: Duplex, join: ClientJoin): void;
  readonly clientCount: number;
  /** Flushes what is queued, closes every client with 1001 and stops. Idempotent. */
  dispose(): void;
}

interface Client {
  readonly ws: WebSocket;
  readonly socket: Duplex;
  queue: Buffer[];
  queuedBytes: number;
  subscription?: Subscription;
  closed: boolean;
  /** The replayed backlog's bytes, allowed on top of the budget until the socket first drains. */
  allowance: number;
}

export function createWsForwarder(stepwise: Stepwise, encoder: FrameEncoder, config: ForwarderConfig = {}): WsForwarder {
  const { maxBufferedBytes } = { ...DEFAULT_FORWARDER_CONFIG, ...config };
  if (!(Number.isFinite(maxBufferedBytes) && maxBufferedBytes > 0)) {
    throw new RangeError(`createWsForwarder: maxBufferedBytes must be a positive number, got ${maxBufferedBytes}`);
  }
  const clients = new Set<Client>();
  const dirty = new Set<Client>();
  let flushScheduled = false;
  let disposed = false;

  // One flush per event-loop turn: each client's frames of that turn go out in one corked write,
  // which is what lets one run fan out to many clients faster than a write per frame.
  const flush = (): void => {
    flushScheduled = false;
    for (const client of dirty) {
      const { queue, socket } = client;
      client.queue = [];
      client.queuedBytes = 0;
      if (client.closed || client.ws.readyState !== WebSocket.OPEN) continue;
      if (queue.length === 1) {
        socket.write(queue[0] as Buffer);
      } else {
        socket.cork();
        for (const chunk of queue) socket.write(chunk);
        socket.uncork();
      }
      if (isTooSlow(client)) tooSlow(client);
    }
    dirty.clear();
  };

  const drop = (client: Client): void => {
    client.closed = true;
    client.subscription?.unsubscribe();
    client.queue = [];
    client.queuedBytes = 0;
    clients.delete(client);
    dirty.delete(client);
  };

  // What the kernel did not take yet: a reader that keeps up drains it every turn. One turn's queue
  // is not counted, so a reconnect replaying a long backlog is not mistaken for a slow reader.
  const isTooSlow = (client: Client): boolean => client.socket.writableLength > maxBufferedBytes + client.allowance;

  // Never wait for a slow reader: past its budget it is dropped, and the run and the others go on.
  const tooSlow = (client: Client): void => {
    drop(client);
    client.ws.close(CLOSE_TRY_AGAIN_LATER, 'client too slow; reconnect with since_seq');
  };

  const enqueue = (client: Client, chunk: Buffer): void => {
    if (client.closed) return;
    client.queue.push(chunk);
    client.queuedBytes += chunk.length;
    if (isTooSlow(client)) return tooSlow(client);
    dirty.add(client);
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };

  const control = (type: string, fields: Record<string, unknown>): Buffer =>
    encodeTextFrame(JSON.stringify({ sem: true, event: { type, id: `${type}:${Date.now()}`, ...fields } }));

  const onMessage = (client: Client, data: RawData, isBinary: boolean): void => {
    if (isBinary) return;
    const text = data.toString();
    if (text.trim() === 'ping' || isPingMessage(text)) enqueue(client, control('ws.pong', { server_time: Date.now() }));
  };

  const attach = (ws: WebSocket, socket: Duplex, { session, sinceSeq }: ClientJoin): void => {
    if (disposed) {
      ws.close(CLOSE_GOING_AWAY, 'server shutting down');
      return;
    }
    const client: Client = { ws, socket, queue: [], queuedBytes: 0, closed: false, allowance: 0 };
    clients.add(client);
    const { hub, controller } = stepwise;
    const lastSeq = hub.lastSeq(session.conv_id);
    enqueue(
      client,
      control('ws.hello', {
        conv_id: session.conv_id,
        session_id: session.session_id,
        server_time: Date.now(),
        last_seq: lastSeq,
        pending_pauses: controller.pending(session.session_id),
      }),
    );
    ws.on('message', (data, isBinary) => onMessage(client, data, isBinary));
    ws.on('close', () => drop(client));
    ws.on('error', () => drop(client));
    // The hello's last_seq and the subscription are taken in the same synchronous step: no gap.
    const subscription = hub.replay$(session.conv_id, sinceSeq ?? lastSeq).subscribe((item) => enqueue(client, encoder.encode(item).wire));
    if (client.closed) {
      subscription.unsubscribe();
      return;
    }
    client.subscription = subscription;
    client.allowance = client.queuedBytes;
    socket.once('drain', () => (client.allowance = 0));
  };

  return {
    attach,
    get clientCount() {
      return clients.size;
    },
    dispose: () => {
      if (disposed) return;
      disposed = true;
      flush();
      for (const client of [...clients]) {
        drop(client);
        client.ws.close(CLOSE_GOING_AWAY, 'server shutting down');
      }
    },
  };
}

function isPingMessage(text: string): boolean {
  if (!text.startsWith('{')) return false;
  try {
    const message = JSON.parse(text) as unknown;
    return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'ws.ping';
  } catch {
    return false;
  }
}
