/**
 * One service on many instances (SPEC §7, issue 11): what an instance adds to the runtime when its
 * store is Redis. Built on the Redis store's frame streams (`tail$`); see src/store/redis/index.ts for
 * the key layout. Part 1: a WebSocket on any instance follows a conversation wherever it runs.
 */
import type { FrameEvent, Store, StoredFrame } from '../core/store.js';
import type { Stepwise } from '../sessions/runtime.js';
import type { Observable } from 'rxjs';
import { createClusterFrames } from './cluster-frames.js';
import { adoptConversation } from './adopt.js';

/** The store an instance of a service shares with the others. */
export interface ClusterStore extends Store<FrameEvent> {
  tail$(convId: string, sinceSeq?: number): Observable<StoredFrame>;
}

/** A runtime joined to its service. */
export interface ClusterRuntime {
  /** The runtime, its `frames` following every instance's frames. */
  readonly stepwise: Stepwise;
  /**
   * Makes a conversation another instance created known here (its session, its seq) before a client
   * joins it; nothing when it is new or known already. Rejects when the store cannot be read.
   */
  join(convId: string): Promise<void>;
}

export function joinCluster(base: Stepwise, store: ClusterStore): ClusterRuntime {
  const frames = createClusterFrames(base.frames, base.hub, store, (convId, sinceSeq) => store.tail$(convId, sinceSeq));
  const stepwise: Stepwise = {
    ...base,
    frames,
    dispose: () => {
      base.dispose();
      frames.dispose();
    },
    suspend: async () => {
      await base.suspend();
      frames.dispose();
    },
  };
  return { stepwise, join: (convId) => adoptConversation(stepwise, store, convId) };
}

export { createClusterFrames, type FrameTail$ } from './cluster-frames.js';
