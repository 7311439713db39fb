import { defer } from 'rxjs';
import type { Redis } from 'ioredis';
import type { GrantRecord, GrantStore } from '../../core/grants.js';

/**
 * Grants in one HASH, `<prefix>grants` (grant_id -> GrantRecord JSON), shared by every instance of the service. `read`
 * runs a command once the store's queued writes are committed, and turns Redis being away into `store_unavailable`.
 */
export function createRedisGrants(client: Redis, prefix: string, read: <T>(query: () => Promise<T>) => Promise<T>): GrantStore {
  const key = `${prefix}grants`;
  return {
    put: (grant) => read(async () => void (await client.hset(key, grant.grant_id, JSON.stringify(grant)))),
    remove: (grantId) => read(async () => (await client.hdel(key, grantId)) > 0),
    list$: () =>
      defer(() =>
        read(async () =>
          Object.values(await client.hgetall(key))
            .map((json) => JSON.parse(json) as GrantRecord)
            .sort((a, b) => a.created_at - b.created_at || a.grant_id.localeCompare(b.grant_id)),
        ),
      ),
  };
}
