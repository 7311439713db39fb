import type { Duplex } from 'node:stream';
import { fromEvent, takeUntil } from 'rxjs';
import type { WebSocket } from 'ws';
import type { Session } from '../sessions/session.js';
import type { Stepwise } from '../sessions/runtime.js';
import type { FrameEncoder } from './frame-encoder.js';
import { helloFrame, pongFrame } from './ws-control.js';
import type { LogFrame } from '../streams/frame-codec.js';
import { createFanout, type Batch } from './ws-fanout.js';
import { createInboxFactory, type InboxConfig } from './ws-inbox.js';
import { createOutboxFactory, type OutboxConfig } from './ws-outbox.js';
import { createWsClients } from './ws-clients.js';

export { CLOSE_TRY_AGAIN_LATER } from './ws-outbox.js';
export { CLOSE_GOING_AWAY } from './ws-clients.js';

export type ForwarderConfig = OutboxConfig & InboxConfig;

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

/** Frames read from the store per query when a client's `since_seq` is older than the hub's buffer. */
const STORE_PAGE = 1000;
/** A socket closed because its frames of before could not be read (WebSocket "internal error"). */
export const CLOSE_INTERNAL_ERROR = 1011;

export function createWsForwarder(stepwise: Stepwise, encoder: FrameEncoder, config: ForwarderConfig = {}): WsForwarder {
  const { frames } = stepwise;
  const fanout = createFanout(frames, encoder);
  const outboxOf = createOutboxFactory(config);
  const listen = createInboxFactory(config);
  const clients = createWsClients();

  const attach = (ws: WebSocket, socket: Duplex, { session, sinceSeq }: ClientJoin): void => {
    if (!clients.admit(ws)) return;
    const outbox = outboxOf(ws, socket);
    const convId = session.conv_id;
    // Committed frames only: a client is never told of a seq that a crash could still lose.
    const lastSeq = frames.lastSeq(convId);
    outbox.send(helloFrame(stepwise, session, lastSeq));
    followFrom(ws, outbox, { frames, fanout, encoder, convId, sent: sinceSeq ?? lastSeq });
    listen(ws, () => outbox.send(pongFrame()));
  };

  return {
    attach,
    get clientCount() {
      return clients.size;
    },
    dispose: () => {
      // What is pending is written out before the sockets close.
      fanout.flush();
      clients.stop();
    },
  };
}

interface Follow {
  readonly frames: Stepwise['frames'];
  readonly fanout: ReturnType<typeof createFanout>;
  readonly encoder: FrameEncoder;
  readonly convId: string;
  /** The newest seq the client has. */
  readonly sent: number;
}

/**
 * A client's frames from `sent` on: live batches are joined first, then the frames of before are
 * sent after it, and a batch that was filling before the join is cut to what follows: no gap, no
 * duplicate. While frames of before are read from the store, live batches wait in `held`.
 */
function followFrom(ws: WebSocket, outbox: ReturnType<ReturnType<typeof createOutboxFactory>>, follow: Follow): void {
  const { frames, fanout, encoder, convId } = follow;
  let sent = follow.sent;
  let held: Batch[] | undefined;
  const deliver = ({ first, frames: list }: Batch): void => {
    const last = first + list.length - 1;
    if (last <= sent) return;
    outbox.write(list.bytes(Math.max(0, sent + 1 - first)));
    sent = last;
  };
  const sendBefore = (items: readonly LogFrame[]): void => {
    const newest = items[items.length - 1];
    if (!newest || newest.seq <= sent) return;
    outbox.write(fanout.framesOf(items).bytes());
    sent = newest.seq;
  };
  fanout
    .batches$(convId)
    .pipe(takeUntil(fromEvent(ws, 'close')))
    .subscribe((batch) => (held ? held.push(batch) : deliver(batch)));
  const backlog = frames.buffered(convId, sent);
  if (backlog) {
    sendBefore(backlog.frames);
    outbox.allowBacklog();
    return;
  }
  const waiting: Batch[] = (held = []);
  // Older than the hub's buffer (after a restart, or trimmed): the store has them.
  const fromStore = async (): Promise<void> => {
    for (let full = true; full && ws.readyState === ws.OPEN; ) {
      const { frames: page } = await frames.read(convId, sent, STORE_PAGE);
      await encoder.prepare(convId, page);
      if (ws.readyState !== ws.OPEN) return;
      sendBefore(page);
      outbox.allowBacklog();
      full = page.length === STORE_PAGE;
    }
    held = undefined;
    for (const batch of waiting) deliver(batch);
  };
  fromStore().catch(() => ws.close(CLOSE_INTERNAL_ERROR, 'the stored frames could not be read; reconnect with since_seq'));
}
