// A pause card's tool calls: each shown as it is, with a checkbox for "Deny…", a JSON editor for "Edit…" and,
// for a question to a person, its answer form.

import { h, pretty, readJsonEditor } from './dom.js';

/** One entry per tool call: {call, select, editor, editError, original, node}. */
export function createPauseCalls(toolCalls, questions) {
  return toolCalls.map((call) => {
    const select = h('input', { type: 'checkbox', checked: true, testid: 'deny-select', data: { toolCallId: call.id } });
    const original = pretty(call.input);
    const editor = h('textarea', { class: 'editor', spellcheck: false, rows: Math.min(12, original.split('\n').length + 1), testid: 'edit-args', data: { toolCallId: call.id } });
    editor.value = original;
    editor.addEventListener('input', () => editor.classList.remove('invalid'));
    const editError = h('div', { class: 'inline-error', testid: 'edit-error', role: 'alert', hidden: true });
    const node = h(
      'div',
      { class: 'pause-call', testid: 'pause-call', data: { toolCallId: call.id, name: call.name } },
      h('label', { class: 'call-head' }, h('span', { class: 'only-deny' }, select), h('strong', { testid: 'pause-call-name', text: call.name }), h('code', { class: 'muted', text: call.id }), callBadge(call)),
      h('pre', { class: 'only-view', testid: 'pause-call-args', text: original }),
      h('div', { class: 'only-edit' }, editor, editError),
      h('div', { class: 'only-view' }, questions.formOf(call.id)?.node),
    );
    return { call, select, editor, editError, original, node };
  });
}

// Why this call paused the run, when it was the call's own doing.
function callBadge(call) {
  if (call.answer_schema) return h('span', { class: 'badge question', testid: 'question-mark', title: 'the model asks a person: answer below', text: 'question' });
  if (call.breakpoint) return h('span', { class: 'badge breakpoint', testid: 'breakpoint-mark', title: 'this tool asked for the pause itself', text: 'breakpoint' });
  return null;
}

/** The changed arguments as {edits: {tool_call_id: value}}, or {error} with each bad editor marked. */
export function collectEdits(calls) {
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
  if (invalid) return { error: 'Fix the arguments marked above; nothing was sent.' };
  if (Object.keys(edits).length === 0) return { error: 'No arguments changed: use Continue to run them as they are.' };
  return { edits };
}

// The server lists schema issues per tool_call_id (details.edits); each goes under its editor.
export function markEditErrors(calls, details) {
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
