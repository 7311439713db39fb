// Pause cards: one per pause_id, whatever told us about it first (a debugger.pause frame or the
// pending_pauses of ws.hello). A card decides by POST /debug/continue and closes only when
// debugger.resume arrives, so every dashboard on the conversation closes it at the same moment.

import { ApiError } from './api.js';
import { renderDecision, timeoutActionOf } from './decision.js';
import { formatClock, h, pretty, readJsonEditor } from './dom.js';
import { formatRemaining, normalizePause, REASON_TEXT } from './pause-object.js';
import { createQuestionForms } from './question-form.js';
import { createResultEditors } from './result-edit.js';

/**
 * Manages the cards. `decide(body)` posts a decision; `serverNow()` is the browser clock corrected
 * by the hello's server_time, so countdowns agree across machines whose clocks disagree.
 */
export function createPauseDeck({ decide, serverNow, convId, fork }) {
  const cards = new Map();

  const tick = () => {
    const now = serverNow();
    for (const card of cards.values()) if (card.open) card.render(now);
  };
  const timer = setInterval(tick, 200);

  // `results`: the tool results an after_tools pause follows ([{id, name, result}]), for "Edit results".
  const buildCard = (pause, results) => {
    const isEdit = pause.phase === 'after_inference' && pause.tool_calls.length > 0;
    const resultEditors = pause.phase === 'after_tools' && results.length > 0 ? createResultEditors(results) : null;
    // Questions for a human are answered in a form built from their answer schemas.
    const questions = createQuestionForms(pause.tool_calls);
    const asks = questions.forms.length > 0;
    const countdown = h('span', { class: 'countdown', testid: 'pause-countdown' });
    const title = h('strong', { text: 'Paused' });
    const bar = h('div', { class: 'bar' });
    const error = h('div', { class: 'inline-error', testid: 'pause-error', role: 'alert', hidden: true });
    const resolution = h('div', { class: 'resolution', testid: 'pause-resolution', hidden: true });
    const decided = h('div', { class: 'decision-slot' });
    const reason = h('input', { class: 'input', type: 'text', placeholder: 'reason the model will see', testid: 'deny-reason' });
    const calls = pause.tool_calls.map((call) => {
      const select = h('input', { type: 'checkbox', checked: true, testid: 'deny-select', data: { toolCallId: call.id } });
      const original = pretty(call.input);
      const editor = h('textarea', { class: 'editor', spellcheck: false, rows: Math.min(12, original.split('\n').length + 1), testid: 'edit-args', data: { toolCallId: call.id } });
      editor.value = original;
      const editError = h('div', { class: 'inline-error', testid: 'edit-error', role: 'alert', hidden: true });
      const node = h(
        'div',
        { class: 'pause-call', testid: 'pause-call', data: { toolCallId: call.id, name: call.name } },
        h('label', { class: 'call-head' }, h('span', { class: 'only-deny' }, select), h('strong', { testid: 'pause-call-name', text: call.name }), h('code', { class: 'muted', text: call.id }), call.answer_schema ? h('span', { class: 'badge question', testid: 'question-mark', title: 'the model asks a person: answer below', text: 'question' }) : call.breakpoint ? h('span', { class: 'badge breakpoint', testid: 'breakpoint-mark', title: 'this tool asked for the pause itself', text: 'breakpoint' }) : null),
        h('pre', { class: 'only-view', testid: 'pause-call-args', text: original }),
        h('div', { class: 'only-edit' }, editor, editError),
        h('div', { class: 'only-view' }, questions.formOf(call.id)?.node),
      );
      return { call, select, editor, editError, original, node };
    });

    const buttons = [];
    // A shortcut key is shown on its button and pressed through it (shortcuts.js).
    const button = (label, testid, cls, onClick, shortcut) => {
      const node = h('button', { type: 'button', class: `btn ${cls}`, testid, 'aria-keyshortcuts': shortcut, data: shortcut ? { shortcut } : undefined, on: { click: onClick } }, label, shortcut ? h('kbd', { class: 'hint', testid: 'shortcut-hint', text: shortcut }) : null);
      buttons.push(node);
      return node;
    };

    const node = h(
      'div',
      { class: 'pause', testid: 'pause-card', tabindex: '0', data: { pauseId: pause.pause_id, phase: pause.phase, state: 'open', mode: 'view' } },
      h('div', { class: 'pause-head' }, h('span', { class: 'pause-icon', 'aria-hidden': 'true' }), title, h('span', { class: 'badge phase', testid: 'pause-phase', text: pause.phase.replace('_', ' ') }), h('span', { class: 'spacer' }), countdown),
      h('div', { class: 'progress' }, bar),
      h('p', { class: 'summary', testid: 'pause-summary', text: pause.summary || '(no summary)' }),
      calls.length ? h('div', { class: 'pause-calls' }, calls.map((c) => c.node)) : null,
      resultEditors ? h('div', { class: 'pause-calls' }, resultEditors.nodes) : null,
      h('div', { class: 'only-deny deny-row' }, reason),
      error,
      h(
        'div',
        { class: 'pause-actions' },
        h(
          'span',
          { class: 'only-view' },
          asks ? button('Answer', 'pause-answer', 'primary', () => submitAnswers(), 'a') : null,
          button('Continue', 'pause-continue', asks ? 'ghost' : 'primary', () => send({ action: 'continue' }), 'c'),
          isEdit ? button('Deny…', 'pause-deny', 'danger-ghost', () => setMode('deny'), 'd') : null,
          isEdit ? button('Edit…', 'pause-edit', 'ghost', () => setMode('edit'), 'e') : null,
          resultEditors ? button('Edit results…', 'pause-edit-results', 'ghost', () => setMode('results'), 'e') : null,
          // A new conversation paused here again, to decide differently there; this pause stays as it is.
          fork ? button('Fork', 'pause-fork', 'ghost fork', () => forkHere()) : null,
        ),
        h('span', { class: 'only-deny' }, button('Deny selected', 'deny-submit', 'danger', () => submitDeny()), button('Back', 'deny-back', 'ghost', () => setMode('view'))),
        h('span', { class: 'only-edit' }, button('Run with edits', 'edit-submit', 'primary', () => submitEdit()), button('Back', 'edit-back', 'ghost', () => setMode('view'))),
        resultEditors ? h('span', { class: 'only-results' }, button('Send edited results', 'results-submit', 'primary', () => submitResults()), button('Back', 'results-back', 'ghost', () => setMode('view'))) : null,
      ),
      resolution,
      decided,
    );

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

    function submitResults() {
      const collected = resultEditors.collect();
      if (collected.error) return showError(collected.error);
      return send({ action: 'edit', results: collected.results });
    }

    const setBusy = (busy) => {
      node.dataset.busy = busy ? 'true' : 'false';
      for (const b of buttons) b.disabled = busy || !card.open;
    };

    async function send(decision) {
      showError('');
      setBusy(true);
      try {
        await decide({ pause_id: pause.pause_id, conv_id: convId, ...decision });
        // Closing waits for debugger.resume, which every dashboard receives, so they close together.
        node.dataset.state = card.open ? 'resolving' : node.dataset.state;
      } catch (failure) {
        const refused = failure instanceof ApiError && failure.status === 400;
        const placed = refused && decision.action === 'edit' ? markEditErrors(failure.details) : refused && decision.action === 'answer' ? questions.showIssues(failure.details) : 0;
        // Issues already shown under their editors need not be repeated in the card's message.
        showError(failure instanceof ApiError ? (placed ? failure.message : failure.describe()) : String(failure?.message ?? failure));
        setBusy(false);
      }
    }

    async function forkHere() {
      showError('');
      try {
        await fork({ pause_id: pause.pause_id });
      } catch (failure) {
        showError(failure instanceof ApiError ? failure.describe() : String(failure?.message ?? failure));
      }
    }

    function submitAnswers() {
      const collected = questions.collect();
      return collected.error ? showError(collected.error) : send({ action: 'answer', answers: collected.answers });
    }

    function submitDeny() {
      const chosen = calls.filter((c) => c.select.checked).map((c) => c.call.id);
      if (chosen.length === 0) return showError('Choose at least one tool call to deny.');
      const decision = { action: 'deny', reason: reason.value.trim() || 'denied by operator' };
      // All chosen means "deny all": say so by omitting the list, as the contract allows.
      if (chosen.length < calls.length) decision.tool_call_ids = chosen;
      return send(decision);
    }

    function submitEdit() {
      const edits = {};
      let invalid = false;
      for (const c of calls) {
        const read = readJsonEditor(c.editor, c.editError);
        if (!read) {
          invalid = true;
          continue;
        }
        const { value } = read;
        if (value === null || typeof value !== 'object' || Array.isArray(value)) {
          invalid = true;
          c.editError.textContent = 'Arguments must be a JSON object.';
          c.editError.hidden = false;
          continue;
        }
        if (JSON.stringify(value) !== JSON.stringify(c.call.input)) edits[c.call.id] = value;
      }
      // Nothing leaves the page while any editor holds something that is not a JSON object.
      if (invalid) return showError('Fix the arguments marked above; nothing was sent.');
      if (Object.keys(edits).length === 0) return showError('No arguments changed: use Continue to run them as they are.');
      return send({ action: 'edit', edits });
    }

    // The server lists schema issues per tool_call_id (details.edits); each goes under its editor.
    function markEditErrors(details) {
      const perCall = details && typeof details === 'object' ? (details.edits ?? details) : {};
      let placed = 0;
      for (const c of calls) {
        const issues = perCall?.[c.call.id];
        if (issues === undefined) continue;
        placed += 1;
        c.editError.textContent = Array.isArray(issues) ? issues.join('\n') : pretty(issues);
        c.editError.hidden = false;
        c.editor.classList.add('invalid');
      }
      return placed;
    }

    for (const c of calls) c.editor.addEventListener('input', () => c.editor.classList.remove('invalid'));

    let total = 0;
    const card = {
      node,
      open: true,
      render(now) {
        const remaining = pause.deadline_ms - now;
        total = Math.max(total, remaining);
        node.dataset.remainingMs = String(Math.max(0, Math.round(remaining)));
        countdown.textContent = formatRemaining(remaining);
        countdown.classList.toggle('urgent', remaining < 5000);
        bar.style.width = `${total > 0 ? Math.max(0, Math.min(100, (remaining / total) * 100)) : 0}%`;
      },
      resolve(event) {
        card.open = false;
        node.dataset.state = 'resolved';
        node.dataset.reason = event.reason ?? '';
        node.dataset.by = event.by ?? '';
        node.dataset.mode = 'view';
        showError('');
        for (const b of buttons) b.disabled = true;
        const label = REASON_TEXT[event.reason] ?? event.reason ?? 'resolved';
        resolution.textContent = `${label}${event.by ? ` by ${event.by}` : ''}${event.at ? ` at ${formatClock(event.at)}` : ''}`;
        resolution.hidden = false;
        title.textContent = 'Resumed';
        countdown.textContent = event.reason ?? 'resolved';
        countdown.classList.remove('urgent');
      },
      /** Shows the recorded decision (GET /conversations/:id/decisions); the latest record wins. */
      record(decision) {
        node.dataset.by = decision.by ?? node.dataset.by ?? '';
        node.dataset.decided = 'true';
        decided.replaceChildren(renderDecision(decision, (id) => pause.tool_calls.find((call) => call.id === id)?.name));
        // The frame said only why; the record says exactly what: the deny message, the timeout action run.
        const action = timeoutActionOf(decision);
        const by = decision.by ? ` by ${decision.by}` : '';
        if (action) resolution.textContent = `Deadline passed: timeout action ${action} ran${by}`;
        else if (decision.reason === 'denied' && decision.message) resolution.textContent = `Denied${by}: “${decision.message}”`;
      },
    };
    card.render(serverNow());
    return card;
  };

  return {
    /** Returns the card for this pause (`results`: what an after_tools pause could edit), creating it the first time the pause is heard of. */
    open(source, { results = [] } = {}) {
      const pause = normalizePause(source);
      let card = cards.get(pause.pause_id);
      // A card from ws.hello comes before the replayed results it could edit: rebuilt once they are known.
      const lacksResults = card?.open && results.length > 0 && !card.node.querySelector('[data-testid="pause-result"]');
      if (!card || lacksResults) {
        const old = card;
        card = buildCard(pause, results);
        cards.set(pause.pause_id, card);
        old?.node.replaceWith(card.node);
      }
      return card.node;
    },
    /** Closes the card for a debugger.resume, showing why. */
    resolve(event) {
      const card = cards.get(event.pause_id ?? event.id);
      if (card?.open) card.resolve(event);
    },
    /** Fills resolved cards with their recorded decisions (who, what was denied or edited); returns those with no card. */
    record(decisions) {
      const unplaced = [];
      for (const decision of decisions ?? []) {
        const card = cards.get(decision.pause_id);
        if (card) card.record(decision);
        else unplaced.push(decision);
      }
      return unplaced;
    },
    /** Pauses still open here, for the header counter. */
    get openCount() {
      let count = 0;
      for (const card of cards.values()) if (card.open) count += 1;
      return count;
    },
    dispose() {
      clearInterval(timer);
      cards.clear();
    },
  };
}
