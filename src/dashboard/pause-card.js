// One pause card: its head and countdown (pause-head.js), its tool calls and their editors (pause-calls.js), the
// result editors and question forms, the decision controls (pause-actions.js) and how a decision is sent
// (pause-decide.js). It shows the resolution when debugger.resume arrives and the recorded decision after that.

import { renderDecision, timeoutActionOf } from './decision.js';
import { formatClock, h } from './dom.js';
import { createPauseActions } from './pause-actions.js';
import { createPauseCalls } from './pause-calls.js';
import { createPauseDecide } from './pause-decide.js';
import { createPauseHead } from './pause-head.js';
import { REASON_TEXT } from './pause-object.js';
import { createQuestionForms } from './question-form.js';
import { createResultEditors } from './result-edit.js';

/** `results`: the tool results an after_tools pause follows ([{id, name, result}]), for "Edit results". */
export function createPauseCard(pause, results, { decide, serverNow, convId, fork }) {
  const isEdit = pause.phase === 'after_inference' && pause.tool_calls.length > 0;
  const resultEditors = pause.phase === 'after_tools' && results.length > 0 ? createResultEditors(results) : null;
  // Questions for a human are answered in a form built from their answer schemas.
  const questions = createQuestionForms(pause.tool_calls);
  const head = createPauseHead(pause);
  const calls = createPauseCalls(pause.tool_calls, questions);
  const error = h('div', { class: 'inline-error', testid: 'pause-error', role: 'alert', hidden: true });
  const resolution = h('div', { class: 'resolution', testid: 'pause-resolution', hidden: true });
  const decided = h('div', { class: 'decision-slot' });
  const reason = h('input', { class: 'input', type: 'text', placeholder: 'reason the model will see', testid: 'deny-reason' });
  // The handlers are looked up on click, by which time `submit` below exists.
  const on = { mode: (mode) => setMode(mode), answer: () => submit.answer(), continue: () => submit.continue(), deny: () => submit.deny(), edit: () => submit.edit(), results: () => submit.results(), fork: () => submit.fork() };
  const actions = createPauseActions({ asks: questions.forms.length > 0, isEdit, hasResults: Boolean(resultEditors), canFork: Boolean(fork), on });

  const node = layoutCard(pause, { head, calls, resultEditors, reason, error, actions, resolution, decided });

  const showError = (message) => {
    error.textContent = message;
    error.hidden = !message;
  };

  function setMode(mode) {
    node.dataset.mode = mode;
    showError('');
    if (mode === 'edit') calls[0]?.editor.focus();
    if (mode === 'deny') reason.focus();
    if (mode === 'results') resultEditors?.first?.focus();
  }

  const setBusy = (busy) => {
    node.dataset.busy = busy ? 'true' : 'false';
    for (const b of actions.buttons) b.disabled = busy || !card.open;
  };
  const submit = createPauseDecide(pause, { decide, convId, fork }, { node, calls, questions, resultEditors, reason, showError, setBusy, isOpen: () => card.open });

  const card = {
    node,
    open: true,
    render(now) {
      const remaining = pause.deadline_ms - now;
      node.dataset.remainingMs = String(Math.max(0, Math.round(remaining)));
      head.render(remaining);
    },
    resolve(event) {
      card.open = false;
      showResolved({ node, resolution, head, buttons: actions.buttons, showError }, event);
    },
    /** Shows the recorded decision (GET /conversations/:id/decisions); the latest record wins. */
    record(decision) {
      showRecord({ node, resolution, decided, pause }, decision);
    },
  };
  card.render(serverNow());
  return card;
}

// The card's parts top to bottom; the only-* wrappers show each in the modes it belongs to.
function layoutCard(pause, { head, calls, resultEditors, reason, error, actions, resolution, decided }) {
  return h(
    'div',
    { class: 'pause', testid: 'pause-card', tabindex: '0', data: { pauseId: pause.pause_id, phase: pause.phase, state: 'open', mode: 'view' } },
    ...head.nodes,
    h('p', { class: 'summary', testid: 'pause-summary', text: pause.summary || '(no summary)' }),
    calls.length ? h('div', { class: 'pause-calls' }, calls.map((c) => c.node)) : null,
    resultEditors ? h('div', { class: 'pause-calls' }, resultEditors.nodes) : null,
    h('div', { class: 'only-deny deny-row' }, reason),
    error,
    actions.node,
    resolution,
    decided,
  );
}

// debugger.resume: the card stops counting and says why it closed, who closed it and when.
function showResolved({ node, resolution, head, buttons, showError }, event) {
  node.dataset.state = 'resolved';
  node.dataset.reason = event.reason ?? '';
  node.dataset.by = event.by ?? '';
  node.dataset.mode = 'view';
  showError('');
  for (const b of buttons) b.disabled = true;
  const label = REASON_TEXT[event.reason] ?? event.reason ?? 'resolved';
  resolution.textContent = `${label}${event.by ? ` by ${event.by}` : ''}${event.at ? ` at ${formatClock(event.at)}` : ''}`;
  resolution.hidden = false;
  head.showResumed(event.reason);
}

function showRecord({ node, resolution, decided, pause }, decision) {
  node.dataset.by = decision.by ?? node.dataset.by ?? '';
  node.dataset.decided = 'true';
  decided.replaceChildren(renderDecision(decision, (id) => pause.tool_calls.find((call) => call.id === id)?.name));
  // The frame said only why; the record says exactly what: the deny message, the timeout action run.
  const action = timeoutActionOf(decision);
  const by = decision.by ? ` by ${decision.by}` : '';
  if (action) resolution.textContent = `Deadline passed: timeout action ${action} ran${by}`;
  else if (decision.reason === 'denied' && decision.message) resolution.textContent = `Denied${by}: “${decision.message}”`;
}
