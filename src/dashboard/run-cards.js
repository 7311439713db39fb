// The cards the transcript is made of: one per run (prompt, steps, usage, Fork once it ended) and
// one per tool call (arguments, what ran after an edit, the result).

import { h, pretty } from './dom.js';

const shortId = (id) => (typeof id === 'string' && id.length > 14 ? `${id.slice(0, 6)}…${id.slice(-6)}` : id ?? '');

export function createRun(event, onFork) {
  const status = h('span', { class: 'badge running', testid: 'run-status', text: 'running' });
  // Shown once the run ended: a fork copies finished turns (a running one is forked at its pauses).
  const fork = onFork && event.turn_id ? h('button', { type: 'button', class: 'btn ghost small fork', testid: 'turn-fork', title: 'a new conversation with the history up to this turn', hidden: true, text: 'Fork', on: { click: () => onFork({ turn_id: event.turn_id }) } }) : null;
  const prompt = h('div', { class: 'msg user', testid: 'user-prompt', hidden: true });
  const steps = h('div', { class: 'steps' });
  const usage = h('div', { class: 'usage', testid: 'run-usage' });
  const error = h('div', { class: 'run-error', testid: 'run-error', hidden: true });
  const node = h(
    'article',
    { class: 'run', testid: 'run', data: { inferenceId: event.inference_id ?? '', turnId: event.turn_id ?? '', status: 'running' } },
    h(
      'header',
      { class: 'run-head' },
      h('span', { class: 'run-title', text: 'Run' }),
      h('code', { class: 'muted', title: event.inference_id ?? '', text: shortId(event.inference_id) }),
      h('span', { class: 'spacer' }),
      status,
      fork,
    ),
    prompt,
    steps,
    error,
    h('footer', { class: 'run-foot' }, usage),
  );
  return { node, status, fork, prompt, steps, usage, error, tools: new Map(), message: null, tokens: { input: 0, output: 0 }, turnId: event.turn_id };
}

export function createToolCard(event) {
  const state = h('span', { class: 'badge requested', testid: 'tool-state', text: 'requested' });
  const duration = h('span', { class: 'muted', testid: 'tool-duration' });
  const ran = h('div', { class: 'tool-section', hidden: true });
  const result = h('div', { class: 'tool-section', hidden: true });
  const node = h(
    'div',
    { class: 'tool', testid: 'tool-call', data: { toolCallId: event.id ?? '', name: event.name ?? '', state: 'requested' } },
    h('div', { class: 'tool-head' }, h('span', { class: 'tool-icon', text: '⚙' }), h('strong', { testid: 'tool-name', text: event.name ?? '?' }), h('code', { class: 'muted', text: shortId(event.id) }), h('span', { class: 'spacer' }), duration, state),
    h('div', { class: 'tool-section' }, h('div', { class: 'label', text: 'arguments' }), h('pre', { testid: 'tool-args', text: pretty(event.input) })),
    ran,
    result,
  );
  return { node, state, duration, ran, result, input: event.input };
}

export function setState(tool, name, label = name) {
  tool.node.dataset.state = name;
  tool.state.className = `badge ${name}`;
  tool.state.textContent = label;
}
