import type { StoreRetentionConfig } from '../core/store.js';

/** How many frames a conversation keeps, and the count at which older ones are trimmed. */
export interface Retention {
  /** Infinity: keep everything. */
  readonly max: number;
  /**
   * Trimming waits until a quarter more than `max` is stored, so it costs one delete per `max / 4`
   * appends rather than one per append.
   */
  readonly trimAt: number;
}

export function resolveRetention(config: StoreRetentionConfig, factory: string): Retention {
  const max = config.maxFramesPerConversation ?? Number.POSITIVE_INFINITY;
  if (max !== Number.POSITIVE_INFINITY && !(Number.isInteger(max) && max >= 1)) {
    throw new RangeError(`${factory}: maxFramesPerConversation must be a positive integer (or omitted to keep every frame), got ${String(max)}`);
  }
  return { max, trimAt: max === Number.POSITIVE_INFINITY ? max : max + Math.ceil(max / 4) };
}
