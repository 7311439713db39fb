import { defer, of } from 'rxjs';
import type { Database } from 'better-sqlite3';
import type { GrantRecord, GrantStore } from '../../core/grants.js';

/**
 * Grants in the `grants` table (migration 7), written and read at once, beside the store's batched queue: a grant is
 * rare, its reply (a 200) promises it is on disk, and the loop reads grants synchronously (no event-loop turn per
 * would-be pause). Nothing queued concerns grants, so no read waits for the queue.
 */
export function createSqliteGrants(db: Database): GrantStore {
  const insert = db.prepare(`INSERT OR REPLACE INTO grants (grant_id, created_at, grant_record) VALUES (?, ?, ?)`);
  const remove = db.prepare(`DELETE FROM grants WHERE grant_id = ?`);
  const all = db.prepare(`SELECT grant_record FROM grants ORDER BY created_at, grant_id`).pluck();
  const now = <T>(write: () => T): Promise<T> => {
    try {
      return Promise.resolve(write());
    } catch (error) {
      return Promise.reject(error as Error);
    }
  };
  return {
    put: (grant) => now(() => void insert.run(grant.grant_id, grant.created_at, JSON.stringify(grant))),
    remove: (grantId) => now(() => remove.run(grantId).changes > 0),
    list$: () => defer(() => of((all.all() as string[]).map((json) => JSON.parse(json) as GrantRecord))),
  };
}
