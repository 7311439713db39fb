// What one inference sent to the model, folded next to what came back: the transcript (every block
// the engine got, system prompt first) and the tool specs it was offered, from
// GET /conversations/:conv_id/inferences/:message_id. Fetched when first opened, not per frame: a
// transcript grows with the conversation, and most inferences are never looked at.

import { h, pretty } from './dom.js';

/** What a block says, in one readable piece. */
function contentOf(block) {
  const payload = block.payload ?? {};
  switch (block.kind) {
    case 'tool_call':
      return pretty(payload.args);
    case 'tool_use':
      return payload.error ? `error: ${payload.error}` : pretty(payload.result);
    default:
      return typeof payload.text === 'string' ? payload.text : pretty(payload);
  }
}

function renderMessage(block) {
  const payload = block.payload ?? {};
  const name = block.kind === 'tool_call' || block.kind === 'tool_use' ? ` ${payload.name ?? ''} ${payload.id ?? ''}`.trimEnd() : '';
  return h(
    'div',
    { class: `sent-message kind-${block.kind}`, testid: 'sent-message', data: { kind: block.kind ?? '', blockId: block.id ?? '' } },
    h('div', { class: 'sent-head' }, h('strong', { text: block.kind ?? '?' }), block.role ? h('span', { class: 'muted', text: ` ${block.role}` }) : null, name ? h('code', { class: 'muted', text: name }) : null),
    h('pre', { testid: 'sent-message-content', text: contentOf(block) }),
  );
}

/** One tool spec, its JSON Schema folded: a server may offer dozens. */
function renderTool(spec) {
  return h(
    'details',
    { class: 'sent-tool', testid: 'sent-tool', data: { name: spec.name ?? '' } },
    h('summary', {}, h('strong', { text: spec.name ?? '?' }), spec.description ? h('span', { class: 'muted', text: ` ${spec.description}` }) : null),
    h('pre', { testid: 'sent-tool-parameters', text: pretty(spec.parameters) }),
  );
}

function renderRequest(reply) {
  const messages = Array.isArray(reply.messages) ? reply.messages : [];
  const tools = Array.isArray(reply.tools) ? reply.tools : [];
  return [
    h('div', { class: 'muted small', testid: 'sent-summary', text: `${messages.length} message${messages.length === 1 ? '' : 's'} · ${tools.length} tool${tools.length === 1 ? '' : 's'} offered` }),
    h('div', { class: 'label', text: 'transcript' }),
    h('div', { class: 'sent-messages', testid: 'sent-messages' }, messages.map(renderMessage)),
    h('div', { class: 'label', text: 'tool specs' }),
    tools.length ? h('div', { class: 'sent-tools', testid: 'sent-tools' }, tools.map(renderTool)) : h('div', { class: 'muted small', testid: 'sent-no-tools', text: 'No tools were offered.' }),
  ];
}

/** The "what was sent" block of the model message `messageId`; `load()` resolves to the route's reply. */
export function createInferenceRequest(messageId, load) {
  const body = h('div', { class: 'decision', testid: 'sent-body', data: { state: 'idle' } });
  let loading = null;
  const node = h('details', { class: 'reply request', testid: 'inference-request', data: { messageId: messageId ?? '' } }, h('summary', { text: 'inference: what was sent' }), body);
  node.addEventListener('toggle', () => {
    if (!node.open || loading) return;
    body.dataset.state = 'loading';
    body.replaceChildren(h('div', { class: 'muted small', text: 'loading…' }));
    loading = load()
      .then((reply) => {
        body.replaceChildren(...renderRequest(reply));
        body.dataset.state = 'loaded';
      })
      .catch((failure) => {
        // Asked again when opened again: the server may have been restarting.
        loading = null;
        body.replaceChildren(h('div', { class: 'small sent-error', testid: 'sent-error', text: failure?.describe?.() ?? String(failure?.message ?? failure) }));
        body.dataset.state = 'error';
      });
  });
  return { node };
}
