// Narrow windows: the event pane folds into a tab beside the transcript instead of vanishing.
// The layout's data-pane says which of the two shows; CSS applies it only below the breakpoint,
// so a wide window keeps both side by side whatever was last picked.

export function createPaneTabs(tabs, layout, countBadge) {
  const buttons = [...tabs.querySelectorAll('[data-pane]')];
  const pick = (pane) => {
    layout.dataset.pane = pane;
    for (const button of buttons) button.setAttribute('aria-selected', String(button.dataset.pane === pane));
  };
  for (const button of buttons) button.addEventListener('click', () => pick(button.dataset.pane));
  return {
    pick,
    /** The frame count on the Events tab, so new frames are noticed while the transcript shows. */
    count(n) {
      countBadge.textContent = String(n);
    },
  };
}
