// Keyboard shortcuts on the focused pause card: c continue, d deny, e edit. A key acts on the card
// holding the focus (the card itself or any control in it), through the very button it names, so a
// shortcut can do nothing a click could not. Never while typing: keys in an input, textarea, select
// or editable element are text.

const TYPING = 'input, textarea, select, [contenteditable=""], [contenteditable="true"]';

export function installPauseShortcuts(root = document) {
  const onKey = (key) => {
    if (key.defaultPrevented || key.altKey || key.ctrlKey || key.metaKey || key.isComposing) return;
    const target = key.target;
    if (!(target instanceof Element) || target.closest(TYPING)) return;
    const card = target.closest('[data-testid="pause-card"][data-state="open"]');
    if (!card) return;
    const button = [...card.querySelectorAll(`[data-shortcut="${CSS.escape(key.key.toLowerCase())}"]`)].find((candidate) => !candidate.disabled && candidate.offsetParent !== null);
    if (!button) return;
    key.preventDefault();
    button.click();
  };
  root.addEventListener('keydown', onKey);
  return () => root.removeEventListener('keydown', onKey);
}
