import type { Redis } from 'ioredis';
import type { ConversationRecord, StoredPause } from '../../core/store.js';
import type { RedisKeys } from './keys.js';

/**
 * The pending pauses of the whole service by deadline, a page at a time (docs/protocol.md, The inbox):
 * the `pause-deadlines` index the pause and decision scripts keep, so the inbox's soonest pauses
 * are read without reading every pause of the service.
 */
export interface PauseDeadlineReads {
  /** Pending pauses `offset` to `offset + count - 1` in deadline order (ties: by pause id). */
  page(offset: number, count: number): Promise<PausePage>;
}

export interface PausePage {
  /** Each with its conversation's record (who it is for, its profile); a pause of a conversation being deleted is left out. */
  readonly pauses: readonly { readonly pause: StoredPause; readonly record: ConversationRecord }[];
  /** No pending pause after these. */
  readonly ended: boolean;
}

type Keys = Pick<RedisKeys, 'pauses' | 'pauseDeadlines' | 'conversations'>;

export function createPauseDeadlineReads(client: Redis, keys: Keys): PauseDeadlineReads {
  let indexed: Promise<void> | undefined;
  return {
    page: async (offset, count) => {
      await (indexed ??= indexOlderPauses(client, keys).catch((error: unknown) => {
        indexed = undefined;
        throw error;
      }));
      const ids = await client.zrange(keys.pauseDeadlines, String(offset), String(offset + count - 1));
      if (ids.length === 0) return { pauses: [], ended: true };
      // A pause decided between the two reads is gone from the hash: it is no longer pending.
      const pauses = (await client.hmget(keys.pauses, ...ids)).flatMap((json) => (json === null ? [] : [JSON.parse(json) as StoredPause]));
      const convIds = [...new Set(pauses.map((pause) => pause.conv_id))];
      const records = new Map<string, ConversationRecord>();
      if (convIds.length > 0) {
        const values = await client.hmget(keys.conversations, ...convIds);
        values.forEach((json, i) => json !== null && records.set(convIds[i]!, JSON.parse(json) as ConversationRecord));
      }
      const listed = pauses.flatMap((pause) => {
        const record = records.get(pause.conv_id);
        return record ? [{ pause, record }] : [];
      });
      return { pauses: listed, ended: ids.length < count };
    },
  };
}

/**
 * Pauses stored before the index existed join it once: ZADD of a pause already there changes
 * nothing, and one decided meanwhile is skipped by the reads above (its hash entry is gone).
 */
async function indexOlderPauses(client: Redis, keys: Keys): Promise<void> {
  const [pending, indexed] = await Promise.all([client.hlen(keys.pauses), client.zcard(keys.pauseDeadlines)]);
  if (indexed >= pending) return;
  const pauses = (await client.hvals(keys.pauses)).map((json) => JSON.parse(json) as StoredPause);
  if (pauses.length > 0) await client.zadd(keys.pauseDeadlines, ...pauses.flatMap((pause) => [pause.deadline_ms, pause.pause_id]));
}
