// The WebSocket stream of one conversation (docs/protocol.md, WebSocket): hello, replay from `since_seq`, live frames.
// It reconnects by itself and hands every seq to `onFrame` exactly once, whatever the server resends.

import { endpoint, getToken } from './api.js';

const PING_EVERY_MS = 15_000;
// A socket that misses this many pongs is treated as dead even if the browser has not noticed.
const PONG_GRACE_MS = 10_000;
const MAX_BACKOFF_MS = 5_000;

/**
 * Opens the stream for `convId`. Callbacks: `onHello(hello, {clockOffsetMs, resumed})`,
 * `onFrame(event)` once per seq in order, `onStatus(state, detail)` with
 * state connecting | open | reconnecting | closed, and `onHistoryLost()` when the server no longer
 * has what we saw (it restarted): the page clears and the stream replays from seq 0.
 * Returns `{close, drop, lastSeq}`.
 */
export function connectConversation(convId, { onHello, onFrame, onStatus, onHistoryLost = () => {}, sinceSeq = 0 }) {
  let lastSeq = sinceSeq;
  let socket = null;
  let disposed = false;
  let attempts = 0;
  let everOpened = false;
  let retryTimer = null;
  let pingTimer = null;
  let lastPong = 0;
  let duplicates = 0;

  const url = () => {
    const params = new URLSearchParams({ conv_id: convId, since_seq: String(lastSeq) });
    const token = getToken();
    // Browsers cannot set headers on a WebSocket, hence the query parameter the server also accepts.
    if (token) params.set('access_token', token);
    const target = endpoint('/ws');
    target.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    target.search = params.toString();
    return target.href;
  };

  const handle = (raw) => {
    let message;
    try {
      message = JSON.parse(raw);
    } catch {
      return;
    }
    const event = message?.event;
    if (!event || typeof event.type !== 'string') return;
    if (event.type === 'ws.pong') {
      lastPong = Date.now();
      return;
    }
    if (event.type === 'ws.hello') {
      attempts = 0;
      // Seqs restart with the server; without this, dedupe would swallow every new frame.
      if (typeof event.last_seq === 'number' && event.last_seq < lastSeq) {
        lastSeq = 0;
        onHistoryLost();
        socket?.close(4002, 'history lost, replaying from 0');
        return;
      }
      const clockOffsetMs = typeof event.server_time === 'number' ? event.server_time - Date.now() : 0;
      onHello(event, { clockOffsetMs, resumed: everOpened });
      everOpened = true;
      return;
    }
    if (typeof event.seq !== 'number') {
      onFrame(event);
      return;
    }
    // Dedupe by seq: a resent frame (replay overlapping what we saw live) is dropped here.
    if (event.seq <= lastSeq) {
      duplicates += 1;
      return;
    }
    lastSeq = event.seq;
    onFrame(event);
  };

  const stopPing = () => {
    clearInterval(pingTimer);
    pingTimer = null;
  };

  const startPing = (ws) => {
    lastPong = Date.now();
    pingTimer = setInterval(() => {
      if (Date.now() - lastPong > PING_EVERY_MS + PONG_GRACE_MS) {
        ws.close(4000, 'no pong');
        return;
      }
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'ws.ping' }));
    }, PING_EVERY_MS);
  };

  const open = () => {
    if (disposed) return;
    onStatus(everOpened ? 'reconnecting' : 'connecting');
    const ws = new WebSocket(url());
    socket = ws;
    ws.addEventListener('open', () => {
      if (socket !== ws) return;
      onStatus('open', { sinceSeq: lastSeq });
      startPing(ws);
    });
    ws.addEventListener('message', (msg) => {
      if (socket === ws) handle(msg.data);
    });
    ws.addEventListener('close', (closeEvent) => {
      if (socket !== ws) return;
      stopPing();
      socket = null;
      if (disposed) return;
      const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** attempts);
      attempts += 1;
      onStatus('reconnecting', { code: closeEvent.code, reason: closeEvent.reason, retryInMs: delay, attempts });
      retryTimer = setTimeout(open, delay);
    });
  };

  open();

  return {
    /** The highest seq shown so far; a reconnect asks for the frames after it. */
    get lastSeq() {
      return lastSeq;
    },
    /** How many resent frames were dropped as already seen (for the status line and tests). */
    get duplicates() {
      return duplicates;
    },
    /** Ends the stream for good (switching conversation, changing token). */
    close() {
      disposed = true;
      clearTimeout(retryTimer);
      stopPing();
      const ws = socket;
      socket = null;
      ws?.close(1000, 'dashboard closed');
      onStatus('closed');
    },
    /** Closes the socket as a network failure would; the reconnect logic then takes over. */
    drop() {
      socket?.close(4001, 'dropped by operator');
    },
  };
}
