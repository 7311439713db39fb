// The model's reasoning (llm.thinking.* frames) as a collapsible block above the answer it precedes:
// open while it streams, folded once it is final, unless the reader opened or closed it meanwhile.

import { h } from './dom.js';

const summaryText = (text, streaming) => {
  const words = text.trim() === '' ? 0 : text.trim().split(/\s+/).length;
  return streaming ? `Reasoning… ${words} words` : `Reasoning · ${words} words`;
};

/** A reasoning block for one message; `node` goes before the answer's text. */
export function createReasoningBlock() {
  const label = h('span', { class: 'thinking-label', testid: 'reasoning-summary', text: summaryText('', true) });
  const body = h('pre', { class: 'thinking-body', testid: 'reasoning-text' });
  const node = h('details', { class: 'thinking streaming', testid: 'reasoning', data: { state: 'streaming' }, open: true }, h('summary', {}, label), body);
  // Only a click counts as the reader's choice; our own open/close does not.
  let touched = false;
  node.querySelector('summary').addEventListener('click', () => (touched = true));

  return {
    node,
    get text() {
      return body.textContent;
    },
    /** Shows the reasoning so far (`cumulative` of llm.thinking.delta). */
    update(text) {
      body.textContent = text;
      label.textContent = summaryText(text, true);
    },
    /** The whole reasoning (llm.thinking.final): stop streaming and fold away. */
    finish(text) {
      if (typeof text === 'string') body.textContent = text;
      label.textContent = summaryText(body.textContent, false);
      node.classList.remove('streaming');
      node.dataset.state = 'final';
      if (!touched) node.open = false;
    },
  };
}
