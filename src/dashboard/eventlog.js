// The raw frame stream, one row per seq: what operators read when the transcript is not enough,
// and the page's own proof that each frame was shown once and none was skipped.

import { formatClock, h, keepPinned } from './dom.js';

const KEEP_ROWS = 5000;

const describe = (event) => {
  switch (event.type) {
    case 'llm.delta':
    case 'llm.thinking.delta':
      return JSON.stringify(event.delta ?? '');
    case 'tool.start':
    case 'tool.delta':
    case 'tool.result':
    case 'tool.done':
      return `${event.name ?? ''}${event.error ? ' ✕' : ''}`;
    case 'debugger.pause':
      return event.phase ?? '';
    case 'debugger.resume':
    case 'run.end':
      return event.reason ?? event.status ?? '';
    case 'llm.error':
    case 'log':
      return event.message ?? '';
    default:
      return '';
  }
};

/** `onSelect(event, row)` runs when a row is clicked (or Enter on a focused row): the frame-detail panel. */
export function createEventLog(list, counter, { onSelect = () => {} } = {}) {
  let count = 0;
  let gaps = 0;
  let lastSeq = 0;

  const render = () => {
    counter.textContent = `${count} frames${gaps ? ` · ${gaps} gap${gaps > 1 ? 's' : ''}` : ''}`;
    counter.dataset.count = String(count);
  };

  return {
    reset() {
      count = 0;
      gaps = 0;
      lastSeq = 0;
      list.replaceChildren();
      render();
    },
    append(event) {
      count += 1;
      // The server promises +1 per frame; a jump means the buffer no longer held what we missed.
      if (typeof event.seq === 'number' && lastSeq > 0 && event.seq !== lastSeq + 1) gaps += 1;
      if (typeof event.seq === 'number') lastSeq = event.seq;
      const family = event.type.split('.')[0];
      keepPinned(list, () => {
        list.append(
          h(
            'li',
            {
              class: `frame fam-${family}`,
              testid: 'frame',
              tabindex: '0',
              title: 'show the payload',
              data: { seq: String(event.seq ?? ''), type: event.type },
              on: { click: (click) => onSelect(event, click.currentTarget), keydown: (key) => key.key === 'Enter' && onSelect(event, key.currentTarget) },
            },
            h('span', { class: 'seq', text: event.seq ?? '·' }),
            h('span', { class: 'type', text: event.type }),
            h('span', { class: 'detail', text: describe(event) }),
          ),
        );
        if (list.childElementCount > KEEP_ROWS) list.firstElementChild.remove();
      });
      render();
    },
    /** A marker row where the connection dropped and resumed, so the reader sees where it happened. */
    mark(text) {
      keepPinned(list, () => list.append(h('li', { class: 'frame marker', testid: 'frame-marker', text: `${formatClock(Date.now())} ${text}` })));
    },
  };
}
