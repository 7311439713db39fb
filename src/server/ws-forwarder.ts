import type { Duplex } from 'node:stream';
import { fromEvent, takeUntil } from 'rxjs';
import type { WebSocket } from 'ws';
import type { Session } from '../sessions/session.js';
import type { Stepwise } from '../sessions/runtime.js';
import type { FrameEncoder } from './frame-encoder.js';
import { helloFrame, isPing, pongFrame } from './ws-control.js';
import { createFanout, framesOf } from './ws-fanout.js';
import { createOutboxFactory, type OutboxConfig } from './ws-outbox.js';

export { CLOSE_TRY_AGAIN_LATER } from './ws-outbox.js';
export const CLOSE_GOING_AWAY = 1001;

export type ForwarderConfig = OutboxConfig;

export interface ClientJoin {
  readonly session: Session;
  /** Replay from here; without it the client gets live frames after `ws.hello`'s `last_seq`. */
  readonly sinceSeq?: number;
}

/** The WebSocket clients of every conversation. */
export interface WsForwarder {
  /** Takes over an upgraded socket: sends `ws.hello`, then (replayed and) live frames. */
  attach(ws: WebSocket, socket: Duplex, join: ClientJoin): void;
  readonly clientCount: number;
  /** Writes out what is pending, closes every client with 1001 and stops. Idempotent. */
  dispose(): void;
}

export function createWsForwarder(stepwise: Stepwise, encoder: FrameEncoder, config: ForwarderConfig = {}): WsForwarder {
  const { hub } = stepwise;
  const fanout = createFanout(hub, encoder);
  const outboxOf = createOutboxFactory(config);
  const clients = new Set<WebSocket>();
  let disposed = false;

  const attach = (ws: WebSocket, socket: Duplex, { session, sinceSeq }: ClientJoin): void => {
    if (disposed) {
      ws.close(CLOSE_GOING_AWAY, 'server shutting down');
      return;
    }
    clients.add(ws);
    ws.once('close', () => clients.delete(ws));
    const outbox = outboxOf(ws, socket);
    const convId = session.conv_id;
    const lastSeq = hub.lastSeq(convId);
    outbox.send(helloFrame(stepwise, session, lastSeq));
    // The newest seq this client has: live batches are joined first, then the hub's buffer after it is
    // sent, and a batch that was filling before the join is cut to what follows: no gap, no duplicate.
    let sent = sinceSeq ?? lastSeq;
    fanout
      .batches$(convId)
      .pipe(takeUntil(fromEvent(ws, 'close')))
      .subscribe(({ first, frames }) => {
        const last = first + frames.length - 1;
        if (last <= sent) return;
        outbox.write(frames.bytes(Math.max(0, sent + 1 - first)));
        sent = last;
      });
    const backlog = hub.buffered(convId, sent).frames;
    const newest = backlog[backlog.length - 1];
    if (newest) {
      outbox.write(framesOf(backlog, encoder).bytes());
      sent = newest.seq;
    }
    outbox.allowBacklog();
    ws.on('message', (data, isBinary) => {
      if (!isBinary && isPing(data.toString())) outbox.send(pongFrame());
    });
  };

  return {
    attach,
    get clientCount() {
      return clients.size;
    },
    dispose: () => {
      if (disposed) return;
      disposed = true;
      fanout.flush();
      for (const ws of clients) ws.close(CLOSE_GOING_AWAY, 'server shutting down');
    },
  };
}
