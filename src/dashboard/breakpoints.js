// Per-tool breakpoints (docs/protocol.md, Breakpoints and result edits): step mode with a `tools` filter, set from
// the list of tools the server offers (GET /tools, with where each comes from: built-in, the tools file, an MCP
// server). The list is read again each time the menu opens, so an MCP server's tools leave it when it dies; a filter
// that still names such a tool keeps it listed, marked as no longer offered.

import { h } from './dom.js';

/** `enable(convId, tools)` posts the filter; `listTools()` is GET /tools; `onSet()` runs after the server accepted it. */
export function createBreakpoints(root, { convId, enable, listTools, onSet, onError }) {
  /** name → source, as GET /tools said last. */
  let offered = new Map();
  const chosen = new Set();
  const list = h('div', { class: 'bp-list', testid: 'breakpoint-tools' });
  const status = h('span', { class: 'muted small', testid: 'breakpoint-status' });
  const apply = h('button', { type: 'button', class: 'btn primary small', testid: 'breakpoints-apply', text: 'Pause on these', on: { click: () => submit() } });

  const render = () => {
    const names = renderToolList(list, offered, chosen);
    apply.disabled = names.length === 0;
  };

  async function refresh() {
    try {
      const reply = await listTools();
      offered = new Map((reply.tools ?? []).filter((tool) => typeof tool?.name === 'string').map((tool) => [tool.name, String(tool.source ?? '')]));
      root.dataset.state = 'loaded';
      render();
    } catch (failure) {
      onError(failure);
    }
  }

  async function submit() {
    const target = convId();
    if (!target) return;
    const tools = [...chosen].sort();
    apply.disabled = true;
    try {
      await enable(target, tools);
      status.textContent = tools.length ? `pausing on ${tools.join(', ')}` : 'pausing on every tool';
      onSet(tools);
    } catch (failure) {
      onError(failure);
    } finally {
      apply.disabled = offered.size === 0 && chosen.size === 0;
    }
  }

  root.replaceChildren(h('summary', { testid: 'breakpoints-toggle', text: 'Breakpoints' }), h('div', { class: 'bp-panel' }, h('div', { class: 'label', text: 'pause when the model calls' }), list, h('div', { class: 'bp-foot' }, apply, status)));
  root.addEventListener('toggle', () => {
    if (root.open) {
      root.dataset.state = 'loading';
      refresh();
    }
  });
  render();
  refresh();

  return {
    /** The conversation's current filter (GET /conversations/:id `step_filter`), checked in the list. */
    showFilter(filter) {
      chosen.clear();
      for (const name of filter?.tools ?? []) chosen.add(name);
      status.textContent = filter?.tools?.length ? `pausing on ${filter.tools.join(', ')}` : '';
      render();
    },
  };
}

// One checkbox per tool offered or still chosen, sorted by name; answers the names listed.
function renderToolList(list, offered, chosen) {
  const names = [...new Set([...offered.keys(), ...chosen])].sort();
  list.replaceChildren(
    ...(names.length === 0
      ? [h('div', { class: 'muted small', testid: 'breakpoint-empty', text: 'The server offers no tools.' })]
      : names.map((name) => {
          const source = offered.get(name);
          const box = h('input', { type: 'checkbox', checked: chosen.has(name), testid: 'breakpoint-tool', data: { name, source: source ?? '' }, on: { change: () => (box.checked ? chosen.add(name) : chosen.delete(name)) } });
          const note = source ?? 'no longer offered';
          return h('label', { class: 'bp-tool' }, box, h('code', { text: name }), h('span', { class: 'muted small', testid: 'breakpoint-source', text: note }));
        })),
  );
  return names;
}
