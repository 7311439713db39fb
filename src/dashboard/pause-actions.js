// A pause card's decision controls. The card's `data-mode` (view, deny, edit, results) shows one row of buttons
// at a time through the only-* classes in style.css.

import { h } from './dom.js';

/**
 * The buttons row. `on` holds the click handlers by name; `buttons` lists every button, so the card can disable
 * them all while a decision is on its way or once the pause is over.
 */
export function createPauseActions({ asks, isEdit, hasResults, canFork, on }) {
  const buttons = [];
  // A shortcut key is shown on its button and pressed through it (shortcuts.js).
  const button = (label, testid, cls, onClick, shortcut) => {
    const node = h('button', { type: 'button', class: `btn ${cls}`, testid, 'aria-keyshortcuts': shortcut, data: shortcut ? { shortcut } : undefined, on: { click: onClick } }, label, shortcut ? h('kbd', { class: 'hint', testid: 'shortcut-hint', text: shortcut }) : null);
    buttons.push(node);
    return node;
  };
  const back = () => on.mode('view');
  const node = h(
    'div',
    { class: 'pause-actions' },
    h(
      'span',
      { class: 'only-view' },
      asks ? button('Answer', 'pause-answer', 'primary', () => on.answer(), 'a') : null,
      button('Continue', 'pause-continue', asks ? 'ghost' : 'primary', () => on.continue(), 'c'),
      isEdit ? button('Deny…', 'pause-deny', 'danger-ghost', () => on.mode('deny'), 'd') : null,
      isEdit ? button('Edit…', 'pause-edit', 'ghost', () => on.mode('edit'), 'e') : null,
      hasResults ? button('Edit results…', 'pause-edit-results', 'ghost', () => on.mode('results'), 'e') : null,
      // A new conversation paused here again, to decide differently there; this pause stays as it is.
      canFork ? button('Fork', 'pause-fork', 'ghost fork', () => on.fork()) : null,
    ),
    h('span', { class: 'only-deny' }, button('Deny selected', 'deny-submit', 'danger', () => on.deny()), button('Back', 'deny-back', 'ghost', back)),
    h('span', { class: 'only-edit' }, button('Run with edits', 'edit-submit', 'primary', () => on.edit()), button('Back', 'edit-back', 'ghost', back)),
    hasResults ? h('span', { class: 'only-results' }, button('Send edited results', 'results-submit', 'primary', () => on.results()), button('Back', 'results-back', 'ghost', back)) : null,
  );
  return { node, buttons };
}
