// The transcript of a conversation, built from SEM frames: one card per run, holding the streamed
// assistant text, every tool call from request to result, pause cards, errors and usage.

import { h, keepPinned } from './dom.js';
import { createRun } from './run-cards.js';
import { removePlaceholders, showEarlier, showHistory } from './timeline-earlier.js';
import { createLlmHandlers } from './timeline-llm.js';
import { createPauseHandlers, placePause } from './timeline-pauses.js';
import { endRun, fillPrompts, showCopied, showLog, showPrompt } from './timeline-runs.js';
import { createToolHandlers } from './timeline-tools.js';

const empty = () =>
  h('div', { class: 'empty', testid: 'timeline-empty' }, h('div', { class: 'empty-title', text: 'Nothing here yet' }), h('div', { text: 'Send a prompt below. With step mode on, the run stops before each tool call so you can inspect, edit or deny it.' }));

/**
 * Creates the transcript inside `pane`. `pauses` places and resolves pause cards (see pauses.js);
 * `loadRequest(messageId)` fetches what an inference sent to the model.
 */
export function createTimeline(pane, { pauses, onFork, loadRequest }) {
  let runs = [];
  let current = null;
  let pendingPrompt = null;

  const reset = () => {
    runs = [];
    current = null;
    pendingPrompt = null;
    pane.replaceChildren(empty());
  };

  const startRun = (event) => {
    removePlaceholders(pane, event);
    current = createRun(event, onFork);
    runs.push(current);
    if (pendingPrompt !== null) showPrompt(current, pendingPrompt);
    pendingPrompt = null;
    pane.append(current.node);
    return current;
  };

  // Frames of a run whose run.start fell out of the server's buffer still need a home.
  const ensureRun = (event) => current ?? startRun({ inference_id: event.metadata?.inference_id ?? '(earlier)' });

  const handlers = {
    'run.start': (event) => startRun(event),
    ...createLlmHandlers(ensureRun, loadRequest),
    ...createToolHandlers(ensureRun),
    ...createPauseHandlers(pane, pauses, ensureRun),
    'run.end': (event) => {
      endRun(ensureRun(event), event);
      current = null;
    },
    log: (event) => showLog(event, ensureRun),
  };

  reset();

  return {
    reset,
    /** Renders one frame; unknown types are left to the event log. */
    apply(event) {
      const handler = handlers[event.type];
      if (handler) keepPinned(pane, () => handler(event));
    },
    /** Remembers the prompt just sent, for the run.start that may arrive before the /chat reply. */
    expectPrompt: (text) => {
      pendingPrompt = text;
    },
    fillPrompts: (turns) => fillPrompts(runs, turns),
    showEarlier: (decisions) => showEarlier(pane, decisions),
    showHistory: (turns) => showHistory(pane, runs, turns),
    showCopied: (turn) => showCopied(runs, turn),
    placePause: (card) => placePause(pane, current, card),
    get running() {
      return current !== null;
    },
  };
}
