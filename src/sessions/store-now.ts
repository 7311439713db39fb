import type { Store } from '../core/store.js';
import type { EventHubConfig } from '../streams/event-hub.js';
import type { SessionSettings } from './session.js';

/**
 * What a store that reads at once (SQLite: `lastSeqNow`, `checkpointNow`) spares the runtime keeping
 * in memory: the last seq of a conversation the hub let go of, and a hibernated run's checkpoint.
 * A store without them (memory, Redis) leaves both to the runtime.
 */
export function storeReadsNow(store: Store): { readonly hub: Pick<EventHubConfig, 'lastSeqOf'>; readonly sessions: Pick<SessionSettings, 'storedCheckpoint'> } {
  const { lastSeqNow, checkpointNow } = store;
  return {
    hub: lastSeqNow ? { lastSeqOf: (convId) => saidOrZero(() => lastSeqNow(convId)) } : {},
    sessions: checkpointNow ? { storedCheckpoint: (ids) => checkpointNow(ids.conv_id, ids.inference_id) } : {},
  };
}

/** A closed store says nothing more: nothing publishes then. */
function saidOrZero(read: () => number): number {
  try {
    return read();
  } catch {
    return 0;
  }
}
