// The conversation header's live state: running or idle, how many pauses are open, the session and
// sequence the stream is at, and the connection's status.

import { originText } from './conversations.js';
import { statusLabel } from './devtools.js';

/** `app`: {conversations, eventLog, refreshConversations}, what the header reads and tells. */
export function createHeaderStatus(ui, state, { conversations, eventLog, refreshConversations }) {
  return {
    setRunning(running) {
      state.running = running;
      ui.runState.textContent = running ? 'running' : 'idle';
      ui.runState.className = `badge ${running ? 'running' : 'idle'}`;
      ui.cancel.disabled = !running || !state.convId;
    },
    updatePauseCount() {
      const open = state.deck?.openCount ?? 0;
      ui.pauseCount.hidden = open === 0;
      ui.pauseCount.textContent = `${open} paused`;
    },
    showMeta() {
      const origin = originText(state.convId && conversations.find(state.convId));
      ui.meta.textContent = `session ${state.sessionId ?? '?'} · seq ${state.connection?.lastSeq ?? 0}${origin ? ` · ${origin}` : ''}`;
    },
    onStatus(status, detail = {}) {
      ui.conn.dataset.state = status;
      ui.connLabel.textContent = statusLabel(status, detail);
      if (status === 'reconnecting' && detail.code !== undefined && !state.dropped) {
        state.dropped = true;
        eventLog.mark(`connection lost (code ${detail.code})`);
        // A refused upgrade looks like any drop to the browser; an HTTP call tells us if it was auth.
        refreshConversations();
      }
      if (status === 'open') state.dropped = false;
    },
  };
}
