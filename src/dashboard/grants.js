// The grants panel (docs/protocol.md, Grants): the remembered approvals the operator may see, each revocable with one
// click. Read from GET /grants whenever the conversation list refreshes and when a `debugger.granted` frame arrives;
// hidden while there are none (or the server refuses, e.g. 401 before a token).

import { h } from './dom.js';

/** Where a grant applies, in words. */
const whereOf = (grant) =>
  grant.scope === 'conversation' ? `in ${grant.conv_id}` : grant.scope === 'profile' ? `profile ${grant.profile}` : 'everywhere';

const untilOf = (grant) => (grant.expires_at ? `until ${new Date(grant.expires_at).toLocaleTimeString()}` : 'until revoked');

export function createGrantsPanel(section, { list, revoke, onError }) {
  const items = section.querySelector('[data-testid="grant-list"]');

  const draw = (grants) => {
    section.hidden = grants.length === 0;
    items.replaceChildren(
      ...grants.map((grant) =>
        h(
          'li',
          { class: 'grant', testid: 'grant', data: { grantId: grant.grant_id, scope: grant.scope } },
          h('span', { class: 'grant-tools', testid: 'grant-tools', text: grant.tools.join(', ') }),
          h('span', { class: 'muted small', text: `${whereOf(grant)} · ${untilOf(grant)} · by ${grant.by}` }),
          h('button', { class: 'btn danger-ghost small', type: 'button', testid: 'revoke-grant', text: 'Revoke', on: { click: () => remove(grant.grant_id) } }),
        ),
      ),
    );
  };

  const load = async () => {
    try {
      draw((await list()).grants ?? []);
    } catch {
      draw([]);
    }
  };

  const remove = async (grantId) => {
    try {
      await revoke(grantId);
    } catch (failure) {
      // Gone already (another operator, or it expired): the list below shows what is left.
      if (failure?.status !== 404) onError(failure, 'Could not revoke the grant');
    }
    await load();
  };

  return { load };
}
