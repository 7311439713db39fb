import { defer, of } from 'rxjs';
import type { GrantRecord, GrantStore } from '../core/grants.js';

/** Grants of the memory store: as long as the process lives. */
export function createMemoryGrants(): GrantStore {
  const grants = new Map<string, GrantRecord>();
  return {
    put: async (grant) => void grants.set(grant.grant_id, grant),
    remove: async (grantId) => grants.delete(grantId),
    // Oldest first, as the other adapters order them.
    list$: () => defer(() => of([...grants.values()].sort((a, b) => a.created_at - b.created_at || a.grant_id.localeCompare(b.grant_id)))),
  };
}
