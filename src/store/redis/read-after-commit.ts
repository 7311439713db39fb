import type { Connection } from './connection.js';

/*
 * Read-your-writes for the Redis store: writes are queued and committed in batches, so a read first
 * waits for what was queued before it, and fails at once rather than wait while Redis is away. Its own
 * module because it is a rule every read follows, apart from what any one read asks.
 */

/**
 * Resolves once what is queued is committed; fails at once while Redis is unreachable (the writes
 * stay queued), so a read never waits on a reconnect.
 */
export function committedOrDown(connection: Connection, queue: { commitNow(): void; flush(): Promise<void> }): Promise<void> {
  queue.commitNow();
  if (connection.isDown()) return Promise.reject(connection.unavailable());
  return new Promise((resolve, reject) => {
    const stop = connection.onDown(reject);
    queue.flush().then(resolve, reject).finally(stop);
  });
}

/** A read that sees every write queued before it (unless told not to wait for them), then asks Redis. */
export type ReadAfter = <T>(query: () => Promise<T>, afterWrites?: boolean) => Promise<T>;

export function readAfter(committed: () => Promise<void>, connection: Connection): ReadAfter {
  return async (query, afterWrites = true) => {
    if (afterWrites) await committed();
    try {
      return await query();
    } catch (error) {
      throw connection.toStoreError(error);
    }
  };
}
