// What the transcript draws above its runs from the store rather than from frames: decisions whose pauses have
// no card here, and turns that have no run here (a fork's copied history).

import { renderEarlierDecision } from './decision.js';
import { renderHistoryTurn } from './history.js';

/** Decisions whose pauses have no card here (their frames are gone), at the top, once each. */
export function showEarlier(pane, decisions) {
  const drawn = new Set([...pane.querySelectorAll('[data-testid="earlier-decision"]')].map((node) => node.dataset.pauseId));
  const missing = decisions.filter((decision) => decision?.pause_id && !drawn.has(decision.pause_id));
  if (missing.length === 0) return;
  pane.querySelector('[data-testid="timeline-empty"]')?.remove();
  const first = pane.firstElementChild;
  for (const decision of missing) pane.insertBefore(renderEarlierDecision(decision), first);
}

/** Draws the turns that have no run here (a fork's copied history) above the runs, once each. */
export function showHistory(pane, runs, turns) {
  const streamed = new Set(runs.map((run) => run.turnId));
  const drawn = new Set([...pane.querySelectorAll('[data-testid="history-turn"]')].map((node) => node.dataset.turnId));
  const missing = (turns ?? []).filter((turn) => turn?.id && !streamed.has(turn.id) && !drawn.has(turn.id));
  if (missing.length === 0) return;
  pane.querySelector('[data-testid="timeline-empty"]')?.remove();
  const firstRun = runs[0]?.node.isConnected ? runs[0].node : null;
  for (const turn of missing) pane.insertBefore(renderHistoryTurn(turn), firstRun);
}

/** A run's first frame replaces the empty note and, for a fork's paused turn drawn from its blocks, that turn. */
export function removePlaceholders(pane, event) {
  pane.querySelector('[data-testid="timeline-empty"]')?.remove();
  // A turn drawn from its blocks before its frames arrived (a fork's paused turn): the frames win.
  if (event.turn_id) pane.querySelector(`[data-testid="history-turn"][data-turn-id="${CSS.escape(event.turn_id)}"]`)?.remove();
}
