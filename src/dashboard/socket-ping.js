// Keeping a conversation's socket honest: a ping every PING_EVERY_MS, and a socket that misses its pongs is
// closed even if the browser has not noticed it died (the reconnect in socket.js then takes over).

const PING_EVERY_MS = 15_000;
// A socket that misses this many pongs is treated as dead even if the browser has not noticed.
const PONG_GRACE_MS = 10_000;

/** `start(ws)` when a socket opens, `pong()` for each ws.pong, `stop()` when it closes. */
export function createPinger() {
  let pingTimer = null;
  let lastPong = 0;
  const stop = () => {
    clearInterval(pingTimer);
    pingTimer = null;
  };
  return {
    stop,
    pong() {
      lastPong = Date.now();
    },
    start(ws) {
      lastPong = Date.now();
      pingTimer = setInterval(() => {
        if (Date.now() - lastPong > PING_EVERY_MS + PONG_GRACE_MS) {
          ws.close(4000, 'no pong');
          return;
        }
        if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'ws.ping' }));
      }, PING_EVERY_MS);
    },
  };
}
