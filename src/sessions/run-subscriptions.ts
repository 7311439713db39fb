import type { Observable, Observer, Subscription } from 'rxjs';

/**
 * The subscriptions of the runs in progress, one per conversation (a conversation runs one run at a
 * time). A session builds its run; the session registry, which owns the session, subscribes it and
 * holds the subscription, so disposing the registry stops every run it holds, however it was left.
 * A hibernated run has no subscription here: its pause is all it holds, and its session holds that
 * (`HibernatedRun.pause`), which the registry's close or suspend of the session ends.
 */
export interface RunSubscriptions {
  /** Subscribes the conversation's run and holds its subscription while the run is in progress. */
  subscribe<T>(convId: string, run$: Observable<T>, observer: Partial<Observer<T>>): void;
  /** Holds a subscription as the conversation's run (a run restored at a pause: its pause and cancel). */
  hold(convId: string, subscription: Subscription): void;
  /** The conversation's run ended by itself: its subscription is let go, not unsubscribed. */
  release(convId: string): void;
  /** Unsubscribes the conversation's run and lets it go; nothing when none is held. Idempotent. */
  drop(convId: string): void;
  /** Unsubscribes every run held. Idempotent. */
  dispose(): void;
}

export function createRunSubscriptions(): RunSubscriptions {
  const held = new Map<string, Subscription>();
  const drop = (convId: string): void => {
    const subscription = held.get(convId);
    if (!subscription) return;
    held.delete(convId);
    subscription.unsubscribe();
  };
  return {
    subscribe: (convId, run$, observer) => {
      const subscription = run$.subscribe(observer);
      // A run that ended while it was subscribed (cancelled at once, or all synchronous) holds nothing.
      if (!subscription.closed) held.set(convId, subscription);
    },
    hold: (convId, subscription) => void held.set(convId, subscription),
    release: (convId) => void held.delete(convId),
    drop,
    dispose: () => {
      for (const convId of [...held.keys()]) drop(convId);
    },
  };
}
