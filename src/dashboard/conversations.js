// The sidebar: the caller's conversations from GET /conversations, refreshed on run boundaries and
// every few seconds so step mode and running flags set from another dashboard show up here too.

import { formatClock, h } from './dom.js';
import { truncate } from './first-prompts.js';

/** `label(convId)` is what the item says (its first prompt, see first-prompts.js), or undefined for the id. */
export function createConversationList(list, { onPick, label = () => undefined }) {
  let items = [];
  let selected = null;

  const render = () => {
    if (items.length === 0) {
      list.replaceChildren(h('li', { class: 'conv-empty', text: 'No conversations yet.' }));
      return;
    }
    const sorted = [...items].sort((a, b) => String(b.created_at ?? '').localeCompare(String(a.created_at ?? '')));
    list.replaceChildren(
      ...sorted.map((conv) =>
        h(
          'li',
          {},
          h(
            'button',
            {
              type: 'button',
              class: `conv${conv.conv_id === selected ? ' selected' : ''}`,
              testid: 'conversation-item',
              data: { convId: conv.conv_id, running: String(Boolean(conv.running)), stepMode: String(Boolean(conv.step_mode)), profile: conv.profile ?? '' },
              on: { click: () => onPick(conv.conv_id) },
            },
            h('span', { class: `dot ${conv.running ? 'live' : ''}`, title: conv.running ? 'running' : 'idle' }),
            labelOf(conv.conv_id, label(conv.conv_id)),
            conv.step_mode ? h('span', { class: 'badge step', text: 'step' }) : null,
            conv.profile ? h('span', { class: 'badge profile', testid: 'conv-profile', title: 'started with this profile', text: conv.profile }) : null,
            conv.forked_from ? h('span', { class: 'badge fork', testid: 'conv-fork', title: originText(conv), text: 'fork' }) : null,
            h('span', { class: 'conv-time muted', text: createdAt(conv.created_at) }),
          ),
        ),
      ),
    );
  };

  return {
    set(conversations) {
      items = Array.isArray(conversations) ? conversations : [];
      render();
    },
    /** Draws the list again (a first prompt became known). */
    redraw() {
      render();
    },
    select(convId) {
      selected = convId;
      render();
    },
    find(convId) {
      return items.find((conv) => conv.conv_id === convId);
    },
  };
}

/** The item's text: the first prompt when known (the id on hover), else the id itself. */
function labelOf(convId, prompt) {
  if (!prompt) return h('span', { class: 'conv-id', testid: 'conv-label', title: convId, data: { kind: 'id' }, text: convId });
  return h('span', { class: 'conv-prompt', testid: 'conv-label', title: `${convId}\n${prompt}`, data: { kind: 'prompt' }, text: truncate(prompt) });
}

/** Where a fork came from, in words ('' for a conversation that is not a fork). */
export function originText(conv) {
  const origin = conv?.forked_from;
  if (!origin) return '';
  const at = origin.pause_id ? ` at pause ${origin.pause_id}` : origin.turn_id ? ` at turn ${origin.turn_id}` : '';
  return `forked from ${origin.conv_id}${at}`;
}

function createdAt(value) {
  if (value === undefined || value === null) return '';
  const ms = typeof value === 'number' ? value : Date.parse(value);
  return Number.isNaN(ms) ? '' : formatClock(ms);
}
