// Turns a conversation has without frames of its own: a fork's copied history (docs/protocol.md, Forks). Its frames
// stayed in the source's stream, so these are drawn from the turns' blocks (GET /conversations/:id),
// compactly, above the runs this conversation streamed itself.

import { h, pretty } from './dom.js';

/** A turn's blocks as the transcript shows them: the prompt, the model's texts, each tool call with its result. */
export function renderBlocks(blocks, { withPrompt = true } = {}) {
  const results = new Map();
  for (const block of blocks ?? []) if (block.kind === 'tool_use') results.set(block.payload?.id, block.payload);
  const parts = [];
  for (const block of blocks ?? []) {
    const payload = block.payload ?? {};
    if (block.kind === 'user' && withPrompt) parts.push(h('div', { class: 'msg user', testid: 'history-prompt', text: payload.text ?? '' }));
    if (block.kind === 'llm_text' && payload.text) parts.push(h('div', { class: 'msg assistant', testid: 'history-text', text: payload.text }));
    if (block.kind === 'tool_call') {
      const used = results.get(payload.id);
      const failed = used?.error !== undefined && used?.error !== null;
      parts.push(
        h(
          'div',
          { class: 'tool', testid: 'history-tool', data: { toolCallId: payload.id ?? '', name: payload.name ?? '' } },
          h('div', { class: 'tool-head' }, h('span', { class: 'tool-icon', text: '⚙' }), h('strong', { text: payload.name ?? '?' }), h('code', { class: 'muted', text: payload.id ?? '' })),
          h('pre', { text: pretty(payload.args) }),
          used ? h('pre', { class: failed ? 'bad' : '', text: pretty(failed ? used.error : used.result) }) : null,
        ),
      );
    }
  }
  return parts;
}

/** One copied turn, as a card of its own. */
export function renderHistoryTurn(turn) {
  return h(
    'article',
    { class: 'run history', testid: 'history-turn', data: { turnId: turn.id ?? '' } },
    h('header', { class: 'run-head' }, h('span', { class: 'run-title', text: 'Copied turn' }), h('code', { class: 'muted', text: turn.id ?? '' })),
    h('div', { class: 'steps' }, renderBlocks(turn.blocks)),
  );
}
