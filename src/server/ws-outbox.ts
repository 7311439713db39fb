import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';

export interface OutboxConfig {
  /** Bytes a client may have waiting in its socket before it is closed with 1013. Default 8 MiB. */
  readonly maxBufferedBytes?: number;
}

const DEFAULT_OUTBOX_CONFIG = Object.freeze({ maxBufferedBytes: 8 * 1024 * 1024 });

/** docs/protocol.md, WebSocket: a slow client is told to come back later (and reconnect with `since_seq`). */
export const CLOSE_TRY_AGAIN_LATER = 1013;

/** One client's way out, within a bounded send buffer: past it the client is closed with 1013. */
export interface Outbox {
  /** Sends a text message with `ws.send`. */
  send(text: string): void;
  /** Writes WebSocket frames already framed by `ws` (see ws-frame.ts). */
  write(frames: Buffer): void;
  /** What was sent so far (a replayed backlog) may exceed the budget until the socket next drains. */
  allowBacklog(): void;
}

export type OutboxFactory = (ws: WebSocket, socket: Duplex) => Outbox;

/** Outboxes of one budget; `socket` is the one `ws` took over at the upgrade. */
export function createOutboxFactory(config: OutboxConfig = {}): OutboxFactory {
  const { maxBufferedBytes } = { ...DEFAULT_OUTBOX_CONFIG, ...config };
  if (!(Number.isFinite(maxBufferedBytes) && maxBufferedBytes > 0)) {
    throw new RangeError(`createOutboxFactory: maxBufferedBytes must be a positive number, got ${maxBufferedBytes}`);
  }
  return (ws, socket) => {
    let allowance = 0;
    let awaitingDrain = false;
    // What the kernel did not take yet, checked before each write: a reader that keeps up drains it
    // between turns, and a turn's own frames (one write) never count against it.
    const isKeepingUp = (): boolean => {
      if (ws.readyState !== ws.OPEN) return false;
      if (ws.bufferedAmount <= maxBufferedBytes + allowance) return true;
      // Never wait for a slow reader: the run and the other clients go on.
      ws.close(CLOSE_TRY_AGAIN_LATER, 'client too slow; reconnect with since_seq');
      return false;
    };
    return {
      send: (text) => {
        if (isKeepingUp()) ws.send(text);
      },
      // Beside ws's own sender, which writes its frames (close, pong) to this same socket synchronously
      // too, so frames keep their order: without permessage-deflate (off in app.ts) it queues nothing.
      write: (frames) => {
        if (isKeepingUp()) socket.write(frames);
      },
      // Called after each page of a long replay: one listener until the socket drains.
      allowBacklog: () => {
        allowance = ws.bufferedAmount;
        if (awaitingDrain) return;
        awaitingDrain = true;
        socket.once('drain', () => {
          allowance = 0;
          awaitingDrain = false;
        });
      },
    };
  };
}
