// Pause cards in the transcript: pauses.js builds and resolves them; the transcript puts each in its run.

import { keepPinned } from './dom.js';

/** The debugger.* frame handlers; `ensureRun(event)` is the run a frame belongs to. */
export function createPauseHandlers(pane, pauses, ensureRun) {
  return {
    'debugger.pause': (event) => {
      // Its frames are here after all: the card replaces the compact earlier entry.
      pane.querySelector(`[data-testid="earlier-decision"][data-pause-id="${CSS.escape(event.pause_id ?? event.id ?? '')}"]`)?.remove();
      const run = ensureRun(event);
      run.steps.append(pauses.open(event, { results: event.phase === 'after_tools' ? run.results ?? [] : [] }));
    },
    'debugger.resume': (event) => pauses.resolve(event),
  };
}

/** Places a card opened from ws.hello (a pause older than the replayed frames) at the end of `current`. */
export function placePause(pane, current, card) {
  if (!card.isConnected) keepPinned(pane, () => (current?.steps ?? pane).append(card));
}
