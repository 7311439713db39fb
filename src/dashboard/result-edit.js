// "Edit results" on an after_tools pause (docs/protocol.md, Breakpoints and result edits): one JSON editor per tool
// result the run just got, sent as `POST /debug/continue {action: "edit", results: {tool_call_id: value}}`. The model
// then sees the edited value; the server keeps the original in the tool_use block and in the decision.

import { h, pretty, readJsonEditor } from './dom.js';

/** The editors for `results` ([{id, name, result}]); `collect()` answers {results} or {error}. */
export function createResultEditors(results) {
  const editors = results.map((entry) => {
    const original = JSON.stringify(entry.result ?? null, null, 2);
    const editor = h('textarea', { class: 'editor', spellcheck: false, rows: Math.min(12, original.split('\n').length + 1), testid: 'edit-result', data: { toolCallId: entry.id } });
    editor.value = original;
    editor.addEventListener('input', () => editor.classList.remove('invalid'));
    const error = h('div', { class: 'inline-error', testid: 'edit-result-error', role: 'alert', hidden: true });
    const node = h(
      'div',
      { class: 'pause-call', testid: 'pause-result', data: { toolCallId: entry.id, name: entry.name ?? '' } },
      h('div', { class: 'call-head' }, h('strong', { text: entry.name ?? '?' }), h('code', { class: 'muted', text: entry.id }), h('span', { class: 'muted small', text: 'result' })),
      h('pre', { class: 'only-view', testid: 'pause-result-value', text: pretty(entry.result) }),
      h('div', { class: 'only-results' }, editor, error),
    );
    return { entry, editor, error, node };
  });

  return {
    nodes: editors.map((e) => e.node),
    get first() {
      return editors[0]?.editor;
    },
    /** The changed results, or an error when an editor holds something that is not JSON. */
    collect() {
      const changed = {};
      let invalid = false;
      for (const e of editors) {
        const read = readJsonEditor(e.editor, e.error);
        if (!read) {
          invalid = true;
          continue;
        }
        if (JSON.stringify(read.value) !== JSON.stringify(e.entry.result ?? null)) changed[e.entry.id] = read.value;
      }
      if (invalid) return { error: 'Fix the results marked above; nothing was sent.' };
      if (Object.keys(changed).length === 0) return { error: 'No result changed: use Continue to pass them on as they are.' };
      return { results: changed };
    },
  };
}
