// A pause card's head: title, phase badge and the countdown to the deadline, with its progress bar.

import { h } from './dom.js';
import { formatRemaining } from './pause-object.js';

/** `nodes` go first in the card; `render(remaining)` moves the countdown, `showResumed(reason)` stops it. */
export function createPauseHead(pause) {
  const countdown = h('span', { class: 'countdown', testid: 'pause-countdown' });
  const title = h('strong', { text: 'Paused' });
  const bar = h('div', { class: 'bar' });
  // The longest remaining time seen is the bar's full width: a card from ws.hello starts part way through.
  let total = 0;
  return {
    nodes: [
      h('div', { class: 'pause-head' }, h('span', { class: 'pause-icon', 'aria-hidden': 'true' }), title, h('span', { class: 'badge phase', testid: 'pause-phase', text: pause.phase.replace('_', ' ') }), h('span', { class: 'spacer' }), countdown),
      h('div', { class: 'progress' }, bar),
    ],
    render(remaining) {
      total = Math.max(total, remaining);
      countdown.textContent = formatRemaining(remaining);
      countdown.classList.toggle('urgent', remaining < 5000);
      bar.style.width = `${total > 0 ? Math.max(0, Math.min(100, (remaining / total) * 100)) : 0}%`;
    },
    showResumed(reason) {
      title.textContent = 'Resumed';
      countdown.textContent = reason ?? 'resolved';
      countdown.classList.remove('urgent');
    },
  };
}
