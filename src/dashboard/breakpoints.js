// Per-tool breakpoints (SPEC §8): step mode with a `tools` filter, set from a small list of the tools
// this page knows. Nothing lists the runtime's tools unless profiles do (GET /profiles names each
// profile's tools, all of them for a profile without a list), so the list is those plus every tool
// seen in this conversation's frames and pauses.

import { h } from './dom.js';

/** `enable(convId, tools)` posts the filter; `onSet()` runs after the server accepted it. */
export function createBreakpoints(root, { convId, enable, onSet, onError }) {
  const known = new Set();
  const chosen = new Set();
  const list = h('div', { class: 'bp-list', testid: 'breakpoint-tools' });
  const status = h('span', { class: 'muted small', testid: 'breakpoint-status' });
  const apply = h('button', { type: 'button', class: 'btn primary small', testid: 'breakpoints-apply', text: 'Pause on these', on: { click: () => submit() } });

  const render = () => {
    const names = [...known].sort();
    list.replaceChildren(
      ...(names.length === 0
        ? [h('div', { class: 'muted small', testid: 'breakpoint-empty', text: 'No tools known yet: they appear as the model calls them.' })]
        : names.map((name) => {
            const box = h('input', { type: 'checkbox', checked: chosen.has(name), testid: 'breakpoint-tool', data: { name }, on: { change: () => (box.checked ? chosen.add(name) : chosen.delete(name)) } });
            return h('label', { class: 'bp-tool' }, box, h('code', { text: name }));
          })),
    );
    apply.disabled = names.length === 0;
  };

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
      apply.disabled = known.size === 0;
    }
  }

  root.replaceChildren(h('summary', { testid: 'breakpoints-toggle', text: 'Breakpoints' }), h('div', { class: 'bp-panel' }, h('div', { class: 'label', text: 'pause when the model calls' }), list, h('div', { class: 'bp-foot' }, apply, status)));
  render();

  const add = (names) => {
    let grew = false;
    for (const name of names) {
      if (typeof name === 'string' && name && !known.has(name)) {
        known.add(name);
        grew = true;
      }
    }
    if (grew) render();
  };

  return {
    /** Tools named by GET /profiles, frames (`tool.start`) or pauses (`tool_calls`). */
    learn: add,
    learnFrame(event) {
      if (event.type === 'tool.start') add([event.name]);
      if (event.type === 'debugger.pause') add((event.extra?.tool_calls ?? []).map((call) => call?.name));
    },
    /** The conversation's current filter (GET /conversations/:id `step_filter`), checked in the list. */
    showFilter(filter) {
      chosen.clear();
      for (const name of filter?.tools ?? []) chosen.add(name);
      add(filter?.tools ?? []);
      status.textContent = filter?.tools?.length ? `pausing on ${filter.tools.join(', ')}` : '';
      render();
    },
  };
}
