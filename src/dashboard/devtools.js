// A window hook for people poking at the page from devtools, and for tests that need to look inside.

/** Exposes the open conversation and its stream on `window.__stepwise`; `state` is app.js's own. */
export function exposeForDevtools(state) {
  window.__stepwise = {
    get convId() {
      return state.convId;
    },
    get lastSeq() {
      return state.connection?.lastSeq ?? 0;
    },
    get duplicatesDropped() {
      return state.connection?.duplicates ?? 0;
    },
    /** Closes the socket as a network failure would; the page must resume by itself. */
    dropSocket() {
      state.connection?.drop();
    },
  };
}

/** What the header's connection badge says for a stream status (socket.js's onStatus). */
export function statusLabel(status, detail = {}) {
  const labels = {
    connecting: 'connecting…',
    open: 'live',
    reconnecting: detail.retryInMs !== undefined ? `reconnecting in ${(detail.retryInMs / 1000).toFixed(1)} s` : 'reconnecting…',
    closed: 'offline',
    idle: 'no conversation',
  };
  return labels[status] ?? status;
}
