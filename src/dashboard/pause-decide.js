// Sending a pause card's decision: POST /pauses/:pause_id (POST /debug/continue for edited results) with what the card's controls collected. A refusal
// (400) is shown on the card, its schema issues under the editors they concern.

import { ApiError } from './api.js';
import { collectEdits, markEditErrors } from './pause-calls.js';

/**
 * The card's submit handlers. `card` holds what they read and mark: {node, calls, questions, resultEditors,
 * reason, showError, setBusy, isOpen}.
 */
export function createPauseDecide(pause, { decide, convId, fork }, card) {
  const { node, calls, questions, resultEditors, reason, showError, setBusy } = card;

  async function send(decision) {
    showError('');
    setBusy(true);
    try {
      await decide({ pause_id: pause.pause_id, conv_id: convId, ...decision });
      // Closing waits for debugger.resume, which every dashboard receives, so they close together.
      node.dataset.state = card.isOpen() ? 'resolving' : node.dataset.state;
    } catch (failure) {
      const refused = failure instanceof ApiError && failure.status === 400;
      const placed = refused && decision.action === 'edit' ? markEditErrors(calls, failure.details) : refused && decision.action === 'answer' ? questions.showIssues(failure.details) : 0;
      // Issues already shown under their editors need not be repeated in the card's message.
      showError(failure instanceof ApiError ? (placed ? failure.message : failure.describe()) : String(failure?.message ?? failure));
      setBusy(false);
    }
  }

  const submitted = (collected, decision) => (collected.error ? showError(collected.error) : send(decision(collected)));

  return {
    continue: () => send({ action: 'continue' }),
    answer: () => submitted(questions.collect(), ({ answers }) => ({ action: 'answer', answers })),
    edit: () => submitted(collectEdits(calls), ({ edits }) => ({ action: 'edit', edits })),
    results: () => submitted(resultEditors.collect(), ({ results }) => ({ action: 'edit', results })),
    deny() {
      const chosen = calls.filter((c) => c.select.checked).map((c) => c.call.id);
      if (chosen.length === 0) return showError('Choose at least one tool call to deny.');
      const decision = { action: 'deny', reason: reason.value.trim() || 'denied by operator' };
      // All chosen means "deny all": say so by omitting the list, as the contract allows.
      if (chosen.length < calls.length) decision.tool_call_ids = chosen;
      return send(decision);
    },
    async fork() {
      showError('');
      try {
        await fork({ pause_id: pause.pause_id });
      } catch (failure) {
        showError(failure instanceof ApiError ? failure.describe() : String(failure?.message ?? failure));
      }
    },
  };
}
