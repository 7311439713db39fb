// The profile picker (docs/protocol.md, Profiles file): which profile a new conversation starts with. Filled from
// GET /profiles and hidden when the server has none. A conversation keeps its profile, so once it
// has one (or has run without) the picker shows that and is locked; the operator's own choice
// comes back for the next new conversation.

import { h } from './dom.js';
import { request } from './api.js';

const NO_PROFILE = '';

export function createProfilePicker(label, select, { chat }) {
  let preferred = NO_PROFILE;
  // What the picker shows, and whether it is the open conversation's fixed profile.
  let shown = NO_PROFILE;
  let locked = false;

  const show = (value, isLocked) => {
    locked = isLocked;
    shown = [...select.options].some((option) => option.value === value) ? value : NO_PROFILE;
    select.value = shown;
    select.disabled = locked;
    label.dataset.locked = String(locked);
  };

  select.addEventListener('change', () => {
    if (locked) return;
    preferred = select.value;
    shown = preferred;
  });

  return {
    /** (Re)reads the server's profiles; any failure (401 before a token, say) hides the picker. */
    async load() {
      const profiles = await fetchProfiles();
      select.replaceChildren(h('option', { value: NO_PROFILE, text: 'server default' }), ...profiles.map(profileOption));
      label.hidden = profiles.length === 0;
      show(shown, locked);
    },

    /** A conversation was opened: `known` is its /conversations entry, if it has one yet. */
    open(known) {
      if (known?.profile) show(known.profile, true);
      else show(preferred, false);
    },

    /** The conversation's entry was refreshed: a profile it got (maybe in another tab) shows, locked. */
    refresh(known) {
      if (known?.profile && (known.profile !== shown || !locked)) show(known.profile, true);
    },

    /** The conversation ran: its profile, or its lack of one, is fixed from now on. */
    lock() {
      if (!locked) show(NO_PROFILE, true);
    },

    /** Sends a prompt: to /chat/:profile when a profile is picked for a conversation yet to run. */
    async chat(body) {
      const slug = locked || label.hidden ? NO_PROFILE : shown;
      if (slug === NO_PROFILE) return chat(body);
      const reply = await request('POST', `/chat/${encodeURIComponent(slug)}`, body);
      show(slug, true);
      return reply;
    },
  };
}

async function fetchProfiles() {
  try {
    return (await request('GET', '/profiles')).profiles ?? [];
  } catch {
    return [];
  }
}

function profileOption(profile) {
  return h('option', {
    value: profile.slug,
    text: profile.slug,
    title: [profile.description, `tools: ${(profile.tools ?? []).join(', ') || 'none'}`].filter(Boolean).join(' · '),
  });
}
