import { filter, type Observable, type Subscription } from 'rxjs';
import type { PauseInfo } from '../../core/pauses.js';
import type { SequencedEvent } from '../../streams/events.js';
import type { Deliverer } from './delivery.js';
import type { LinkAction, LinkSigner } from './signing.js';
import { eventsOf, type WebhookEvent, type WebhooksConfig } from './webhooks-config.js';

export interface NotifierConfig {
  readonly config: WebhooksConfig;
  /** Absent when no webhook gets pause events (the only ones with links), so there is no link secret. */
  readonly signer: LinkSigner | undefined;
  readonly deliverer: Deliverer;
  /** Where links point: the server's public URL, its routes under it (`<base>/a/<token>`). */
  readonly baseUrl: () => string;
  /** How long a resume event is tried, having no deadline of its own. Default 60 s. */
  readonly resumeWindowMs?: number;
}

/** Pauses and deliveries remembered for deduplication: the newest, a few bytes each. */
const REMEMBERED = 10_000;

/**
 * Webhooks of the runs this process owns (docs/protocol.md, Webhooks and signed links): each committed
 * `paused` and `resumed` event of its own runs (never the ones relayed from other instances) is sent to
 * every webhook that asked for it, once per webhook on this instance; a pause still being retried stops
 * once it is resumed. It only schedules work: the hub's subscriber returns at once.
 */
export function createWebhookNotifier(events$: Observable<SequencedEvent>, ports: NotifierConfig): Subscription {
  const sent = createMemory(REMEMBERED);
  const resumed = createMemory(REMEMBERED);
  const send = (event: WebhookEvent, pauseId: string, body: string, until: number): void => {
    ports.config.webhooks.forEach((webhook, index) => {
      if (!eventsOf(webhook).includes(event) || !sent.add(`${index}:${event}:${pauseId}`)) return;
      ports.deliverer.send({ webhook, body, until, isMoot: event === 'pause' ? () => resumed.has(pauseId) : undefined });
    });
  };
  const linkTo = (signer: LinkSigner, pause: PauseInfo, action: LinkAction): string =>
    `${ports.baseUrl()}/a/${signer.sign({ pause_id: pause.pause_id, conv_id: pause.conv_id, action, deadline_ms: pause.deadline_ms })}`;
  return events$.pipe(filter((frame) => frame.event.type === 'paused' || frame.event.type === 'resumed')).subscribe(({ event }) => {
    if (event.type === 'paused') {
      const { pause } = event;
      const { signer } = ports;
      // Without a signer no webhook asked for pauses: `send` sends this to none.
      const links = signer && { continue: linkTo(signer, pause, 'continue'), deny: linkTo(signer, pause, 'deny') };
      send('pause', pause.pause_id, JSON.stringify({ type: 'pause', pause, conv_id: pause.conv_id, links }), pause.deadline_ms);
    } else if (event.type === 'resumed') {
      resumed.add(event.pause_id);
      const pause = { pause_id: event.pause_id, reason: event.reason, ...(event.by === undefined ? {} : { by: event.by }) };
      send('resume', event.pause_id, JSON.stringify({ type: 'resume', pause, conv_id: event.conv_id }), Date.now() + (ports.resumeWindowMs ?? 60_000));
    }
  });
}

/** A bounded set: `add` says whether the key is new; past the limit the oldest is forgotten. */
function createMemory(limit: number): { add(key: string): boolean; has(key: string): boolean } {
  const keys = new Set<string>();
  return {
    add: (key) => {
      if (keys.has(key)) return false;
      keys.add(key);
      if (keys.size > limit) keys.delete(keys.values().next().value as string);
      return true;
    },
    has: (key) => keys.has(key),
  };
}
