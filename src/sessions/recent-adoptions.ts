import type { SchedulerLike } from 'rxjs';
import type { StoredConversation } from '../core/store.js';
import { keepNewest } from '../core/bounded-map.js';

/** How long after a conversation was adopted `open` adopts it again rather than creating it, ms. */
const REJOIN_WITHIN_MS = 10_000;
/** How many recent adoptions are remembered for that. */
const REJOIN_MEMORY = 1000;

/**
 * The conversations adopted lately (docs/protocol.md, Several instances), newest last: `open` right
 * after a join finds its own, even when retention closed it since (more busy sessions than it keeps),
 * and adopts it again rather than creating it anew over another instance's stored conversation.
 */
export interface RecentAdoptions {
  /** The conversation was adopted now. */
  remember(conversation: StoredConversation): void;
  /** The conversation as it was adopted a moment ago; undefined when it was not, or too long ago. */
  recent(convId: string): StoredConversation | undefined;
}

export function createRecentAdoptions(scheduler: SchedulerLike): RecentAdoptions {
  const joined = new Map<string, { readonly conversation: StoredConversation; readonly at: number }>();
  return {
    remember: (conversation) => {
      keepNewest(joined, conversation.conv_id, { conversation, at: scheduler.now() }, REJOIN_MEMORY);
    },
    recent: (convId) => {
      const adopted = joined.get(convId);
      return adopted && scheduler.now() - adopted.at <= REJOIN_WITHIN_MS ? adopted.conversation : undefined;
    },
  };
}
