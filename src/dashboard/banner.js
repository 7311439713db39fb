// The error banner under the conversation header: the server's JSON error message, its code, and
// a way to dismiss it. One at a time; a newer error replaces the older.

import { ApiError } from './api.js';
import { h } from './dom.js';

export function createBanner(node) {
  const clear = () => {
    node.hidden = true;
    node.replaceChildren();
  };

  /** Shows `failure` (an ApiError or anything thrown), prefixed by what we were trying to do. */
  const show = (failure, context) => {
    const message = failure instanceof ApiError ? failure.describe() : String(failure?.message ?? failure);
    const code = failure instanceof ApiError ? failure.code : 'error';
    node.replaceChildren(
      h('span', { class: 'banner-text', testid: 'error-message', text: `${context ? `${context}: ` : ''}${message}` }),
      h('code', { class: 'muted', text: code }),
      h('button', { type: 'button', class: 'btn ghost small', text: 'Dismiss', on: { click: clear } }),
    );
    node.dataset.code = code;
    node.hidden = false;
  };

  return { show, clear };
}
