import type { WebSocket } from 'ws';
import { isTextTooDeep, TOO_DEEP } from '../core/json-bounds.js';
import { isPing } from './ws-control.js';

export interface InboxConfig {
  /**
   * Messages, pings and pongs a client may send in one second before it is closed with 1008. Default
   * 50: the protocol's only client message is a ping, which the dashboard sends every few seconds.
   * Keep it under ws's `maxPendingAutoPongs` (60): then a burst of ping frames meets this rule and its
   * 1008 before ws drops the connection, without a close frame, for the pongs it could not write yet.
   */
  readonly maxMessagesPerSecond?: number;
}

const DEFAULT_INBOX_CONFIG = Object.freeze({ maxMessagesPerSecond: 50 });

/** docs/protocol.md "WebSocket": a binary message (RFC 6455 names 1003 for data an endpoint does not accept). */
export const CLOSE_UNSUPPORTED_DATA = 1003;
/** docs/protocol.md "WebSocket": a message nested deeper than the protocol allows (RFC 6455: data inconsistent with its type). */
export const CLOSE_INVALID_DATA = 1007;
/** docs/protocol.md "WebSocket": more messages a second than the server allows. */
export const CLOSE_POLICY_VIOLATION = 1008;

/** Listens to what one client sends, answering a ping with `pong`; closes the client when it breaks the rules. */
export type Inbox = (ws: WebSocket, pong: () => void) => void;

/**
 * Inboxes of one rate. ws itself closes a client over maxPayload (1009), with invalid UTF-8 (1007) or
 * breaking the framing (1002); what is left is what the protocol does not allow: binary messages and a
 * flood. The rate is counted in fixed one-second windows: simple, and a burst is still bounded (twice
 * the rate across a window's edge).
 */
export function createInboxFactory(config: InboxConfig = {}): Inbox {
  const { maxMessagesPerSecond } = { ...DEFAULT_INBOX_CONFIG, ...config };
  if (!(Number.isInteger(maxMessagesPerSecond) && maxMessagesPerSecond > 0)) {
    throw new RangeError(`createInboxFactory: maxMessagesPerSecond must be a positive integer, got ${maxMessagesPerSecond}`);
  }
  return (ws, pong) => {
    let windowStart = -Infinity;
    let count = 0;
    // Once closing, nothing it still sends is read: its close frame is all the server waits for.
    const isAllowed = (): boolean => {
      if (ws.readyState !== ws.OPEN) return false;
      const at = Date.now();
      if (at - windowStart >= 1000) {
        windowStart = at;
        count = 0;
      }
      if (++count <= maxMessagesPerSecond) return true;
      ws.close(CLOSE_POLICY_VIOLATION, `more than ${maxMessagesPerSecond} messages a second`);
      return false;
    };
    // ws answers each ping frame itself (while open): a ping flood is closed as any other.
    ws.on('ping', isAllowed);
    ws.on('pong', isAllowed);
    ws.on('message', (data, isBinary) => {
      if (!isAllowed()) return;
      if (isBinary) ws.close(CLOSE_UNSUPPORTED_DATA, 'binary messages are not part of the protocol');
      // Refused before it is read any further (docs/protocol.md, Untrusted input), as a body is with 400.
      else if (isTextTooDeep(data as Buffer)) ws.close(CLOSE_INVALID_DATA, TOO_DEEP);
      else if (isPing(data.toString())) pong();
    });
  };
}
