// One WebSocket at a time for a conversation's stream, reopened with exponential backoff whenever it closes,
// until disposed. Events of a socket that has been replaced are ignored.

const MAX_BACKOFF_MS = 5_000;

/**
 * `url()` is asked at each (re)connect; `resumed()` tells a first connect from a reconnect. `onOpen(ws)`,
 * `onMessage(data)` and `onClosed()` concern the current socket only.
 */
export function createSocketLink({ url, resumed, onStatus, onOpen, onMessage, onClosed }) {
  let socket = null;
  let disposed = false;
  let attempts = 0;
  let retryTimer = null;

  const open = () => {
    if (disposed) return;
    onStatus(resumed() ? 'reconnecting' : 'connecting');
    const ws = new WebSocket(url());
    socket = ws;
    ws.addEventListener('open', () => {
      if (socket === ws) onOpen(ws);
    });
    ws.addEventListener('message', (msg) => {
      if (socket === ws) onMessage(msg.data);
    });
    ws.addEventListener('close', (closeEvent) => {
      if (socket !== ws) return;
      onClosed();
      socket = null;
      if (disposed) return;
      const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** attempts);
      attempts += 1;
      onStatus('reconnecting', { code: closeEvent.code, reason: closeEvent.reason, retryInMs: delay, attempts });
      retryTimer = setTimeout(open, delay);
    });
  };

  return {
    open,
    /** A hello arrived: the next drop retries at once again. */
    connected() {
      attempts = 0;
    },
    /** Closes the current socket; unless disposed, a new one follows. */
    close(code, reason) {
      socket?.close(code, reason);
    },
    /** No more sockets: the current one is closed with `code` and none follows. */
    dispose(code, reason) {
      disposed = true;
      clearTimeout(retryTimer);
      const ws = socket;
      socket = null;
      ws?.close(code, reason);
    },
  };
}
