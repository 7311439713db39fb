import type { Redis } from 'ioredis';
import { merge, Subject, type Observable } from 'rxjs';
import type { PauseFeedFrame } from '../core/directory.js';

export interface ServicePauseFeedConfig {
  readonly instanceId: string;
  /** This instance's own pause and resume frames (its runs'). */
  readonly local$: Observable<PauseFeedFrame>;
  readonly publisher: Redis;
  /** A connection of its own in subscriber mode, for the service's pause channel. */
  readonly subscriber: Redis;
  /** The one channel every instance of the service publishes its pause and resume frames on. */
  readonly channel: string;
}

export interface ServicePauseFeed {
  /** Every instance's pause and resume frames: this one's as they commit, the others' as Redis relays them. */
  readonly frames$: Observable<PauseFeedFrame>;
  dispose(): void;
}

interface Envelope {
  readonly from: string;
  readonly frame: PauseFeedFrame;
}

/**
 * The inbox across a service (docs/protocol.md, The inbox): each instance PUBLISHes the pause and
 * resume frames of the conversations it runs on one channel, once committed, and relays the others'.
 * A conversation's frames come from the one instance that runs it over one connection, so they keep
 * their order; an instance that does not listen (reconnecting) misses what was said meanwhile, which `GET /pauses` and
 * a socket's `ws.hello` list again. Pub/sub rather than the store's per-conversation tails: the inbox
 * follows every conversation at once, which tails (one read per conversation) would not scale to.
 */
export function createServicePauseFeed(config: ServicePauseFeedConfig): ServicePauseFeed {
  const { instanceId, publisher, subscriber, channel } = config;
  const remote$ = new Subject<PauseFeedFrame>();
  const published = config.local$.subscribe((frame) => {
    // A lost publish costs only live news to other instances' inboxes, never a decision: not retried.
    publisher.publish(channel, JSON.stringify({ from: instanceId, frame } satisfies Envelope)).catch(() => undefined);
  });
  subscriber.on('message', (from: string, message: string) => {
    if (from !== channel) return;
    const envelope = parseEnvelope(message);
    if (envelope && envelope.from !== instanceId) remote$.next(envelope.frame);
  });
  // ioredis subscribes again by itself after a reconnect.
  subscriber.subscribe(channel).catch(() => undefined);
  return {
    frames$: merge(config.local$, remote$),
    dispose: () => {
      published.unsubscribe();
      remote$.complete();
      subscriber.disconnect();
    },
  };
}

/** What another instance published; anything else on the channel is ignored. */
function parseEnvelope(message: string): Envelope | undefined {
  try {
    const envelope = JSON.parse(message) as Partial<Envelope>;
    const frame = envelope.frame;
    if (typeof envelope.from !== 'string' || typeof frame?.conv_id !== 'string' || typeof frame.text !== 'string') return undefined;
    return { from: envelope.from, frame: { conv_id: frame.conv_id, owner: frame.owner ?? undefined, profile: frame.profile ?? null, text: frame.text } };
  } catch {
    return undefined;
  }
}
