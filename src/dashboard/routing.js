// The selected conversation lives in the URL hash (#/c/<conv_id>), so a link or a second tab opens
// the same conversation, and back/forward move between conversations.

const HASH = /^#\/c\/([A-Za-z0-9_-]{1,128})$/;

export const convFromHash = () => HASH.exec(location.hash)?.[1] ?? null;

export function navigate(convId) {
  if (convFromHash() !== convId) location.hash = `#/c/${convId}`;
}

/** A fresh conv_id (docs/protocol.md, Conventions: [A-Za-z0-9_-]{1,128}); the server creates it when the socket joins. */
export const newConvId = () => `c-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
