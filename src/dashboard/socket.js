// The WebSocket stream of one conversation (docs/protocol.md, WebSocket): hello, replay from `since_seq`, live frames.
// It reconnects by itself and hands every seq to `onFrame` exactly once, whatever the server resends.

import { endpoint, getToken } from './api.js';
import { createSocketLink } from './socket-link.js';
import { createPinger } from './socket-ping.js';
import { createSeqTracker } from './socket-seq.js';

const streamUrl = (convId, lastSeq) => {
  const params = new URLSearchParams({ conv_id: convId, since_seq: String(lastSeq) });
  const token = getToken();
  // Browsers cannot set headers on a WebSocket, hence the query parameter the server also accepts.
  if (token) params.set('access_token', token);
  const target = endpoint('/ws');
  target.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  target.search = params.toString();
  return target.href;
};

// The frame a message carries, or null for anything else.
const eventOf = (raw) => {
  let message;
  try {
    message = JSON.parse(raw);
  } catch {
    return null;
  }
  const event = message?.event;
  return event && typeof event.type === 'string' ? event : null;
};

/**
 * Opens the stream for `convId`. Callbacks: `onHello(hello, {clockOffsetMs, resumed})`,
 * `onFrame(event)` once per seq in order, `onStatus(state, detail)` with
 * state connecting | open | reconnecting | closed, and `onHistoryLost()` when the server no longer
 * has what we saw (it restarted): the page clears and the stream replays from seq 0.
 * Returns `{close, drop, lastSeq}`.
 */
export function connectConversation(convId, { onHello, onFrame, onStatus, onHistoryLost = () => {}, sinceSeq = 0 }) {
  const seqs = createSeqTracker(sinceSeq);
  const pinger = createPinger();
  let everOpened = false;
  const link = createSocketLink({
    url: () => streamUrl(convId, seqs.lastSeq),
    resumed: () => everOpened,
    onStatus,
    onOpen: (ws) => {
      onStatus('open', { sinceSeq: seqs.lastSeq });
      pinger.start(ws);
    },
    onMessage: (data) => handle(data),
    onClosed: () => pinger.stop(),
  });

  const hello = (event) => {
    link.connected();
    if (seqs.restartIfBehind(event.last_seq)) {
      onHistoryLost();
      link.close(4002, 'history lost, replaying from 0');
      return;
    }
    const clockOffsetMs = typeof event.server_time === 'number' ? event.server_time - Date.now() : 0;
    onHello(event, { clockOffsetMs, resumed: everOpened });
    everOpened = true;
  };

  const handle = (raw) => {
    const event = eventOf(raw);
    if (!event) return;
    if (event.type === 'ws.pong') pinger.pong();
    else if (event.type === 'ws.hello') hello(event);
    else if (seqs.isNew(event)) onFrame(event);
  };

  link.open();

  return {
    /** The highest seq shown so far; a reconnect asks for the frames after it. */
    get lastSeq() {
      return seqs.lastSeq;
    },
    /** How many resent frames were dropped as already seen (for the status line and tests). */
    get duplicates() {
      return seqs.duplicates;
    },
    /** Ends the stream for good (switching conversation, changing token). */
    close() {
      pinger.stop();
      link.dispose(1000, 'dashboard closed');
      onStatus('closed');
    },
    /** Closes the socket as a network failure would; the reconnect logic then takes over. */
    drop() {
      link.close(4001, 'dropped by operator');
    },
  };
}
