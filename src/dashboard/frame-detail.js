// The payload of one frame, opened by clicking its row in the event log: the whole event as the
// server sent it, as a collapsible JSON tree (objects and arrays fold) with its raw text beside it.

import { h } from './dom.js';

const MAX_OPEN_DEPTH = 2;

/** One JSON value as nested <details>: containers fold, leaves show their JSON text. */
function renderValue(value, depth) {
  if (value === null || typeof value !== 'object') {
    return h('span', { class: `json-leaf json-${value === null ? 'null' : typeof value}`, text: JSON.stringify(value) ?? String(value) });
  }
  const entries = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (entries.length === 0) return h('span', { class: 'json-leaf', text: `${open}${close}` });
  return h(
    'details',
    { class: 'json-node', open: depth < MAX_OPEN_DEPTH },
    h('summary', { text: `${open} ${entries.length} ${Array.isArray(value) ? 'items' : 'keys'} ${close}` }),
    h(
      'div',
      { class: 'json-children' },
      entries.map(([key, item]) => h('div', { class: 'json-entry' }, h('span', { class: 'json-key', text: `${key}: ` }), renderValue(item, depth + 1))),
    ),
  );
}

/**
 * The detail panel under the log. `show(event)` opens it on a frame (showing the same frame again
 * closes it, as a second click on a row would be expected to); `close()` hides it.
 */
export function createFrameDetail(panel) {
  let shownSeq = null;
  const close = () => {
    shownSeq = null;
    panel.hidden = true;
    panel.replaceChildren();
    for (const row of panel.parentElement?.querySelectorAll('.frame.selected') ?? []) row.classList.remove('selected');
  };

  return {
    close,
    /** Opens the panel on `event`; `row` is its log row, marked while it is shown. */
    show(event, row) {
      const key = `${event.seq ?? ''}:${event.type}:${event.id ?? ''}`;
      if (shownSeq === key) return close();
      close();
      shownSeq = key;
      row?.classList.add('selected');
      panel.replaceChildren(
        h(
          'div',
          { class: 'frame-detail-head' },
          h('strong', { testid: 'frame-detail-title', text: `${event.type}${event.seq !== undefined ? ` · seq ${event.seq}` : ''}` }),
          h('span', { class: 'spacer' }),
          h('button', { type: 'button', class: 'btn ghost small', testid: 'frame-detail-close', title: 'close (Esc)', text: '✕', on: { click: close } }),
        ),
        h('div', { class: 'frame-detail-tree', testid: 'frame-detail-tree' }, renderValue(event, 0)),
        h('details', { class: 'frame-detail-raw' }, h('summary', { text: 'raw JSON' }), h('pre', { testid: 'frame-detail-json', text: JSON.stringify(event, null, 2) })),
      );
      panel.hidden = false;
    },
  };
}
