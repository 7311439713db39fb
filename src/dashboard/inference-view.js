// What came back from one inference, folded under its message: the text, the tool calls the model
// asked for, usage, stop reason, model and duration, all from `llm.final` and the `tool.start`
// frames that follow it. What was sent to the model is request-view.js, next to it.

import { formatMs, h, pretty } from './dom.js';

const row = (label, value, testid) => h('div', { class: 'decision-row' }, h('span', { class: 'label', text: label }), h('code', { testid, text: value }));

/** The reply block for an `llm.final` frame; `addCall(toolStart)` lists each call the model asked for. */
export function createInferenceReply(event) {
  const meta = event.metadata ?? {};
  const usage = meta.usage ?? {};
  const calls = h('div', { class: 'reply-calls', testid: 'reply-calls' });
  const node = h(
    'details',
    { class: 'reply', testid: 'inference-reply', data: { inferenceId: meta.inference_id ?? '', stopReason: meta.stop_reason ?? '' } },
    h('summary', { text: 'inference: what came back' }),
    h(
      'div',
      { class: 'decision' },
      row('model', meta.model || '—', 'reply-model'),
      row('stop reason', meta.stop_reason ?? '—', 'reply-stop-reason'),
      row('usage', `${usage.input_tokens ?? '?'} in / ${usage.output_tokens ?? '?'} out tokens`, 'reply-usage'),
      row('duration', formatMs(meta.duration_ms) || '—', 'reply-duration'),
      h('div', { class: 'label', text: 'text' }),
      h('pre', { testid: 'reply-text', text: typeof event.text === 'string' ? event.text : '' }),
      h('div', { class: 'label', text: 'tool calls' }),
      calls,
    ),
  );
  return {
    node,
    addCall(toolStart) {
      calls.append(h('div', { class: 'reply-call', testid: 'reply-call', data: { toolCallId: toolStart.id ?? '', name: toolStart.name ?? '' } }, h('strong', { text: toolStart.name ?? '?' }), ' ', h('code', { class: 'muted', text: toolStart.id ?? '' }), h('pre', { text: pretty(toolStart.input) })));
    },
  };
}
