import type { Router } from 'express';
import type { Subscription } from 'rxjs';
import type { Stepwise } from '../../sessions/runtime.js';
import type { ServerContext } from '../context.js';
import { linkRoutes } from '../routes-links.js';
import { createDeliverer } from './delivery.js';
import { createWebhookNotifier } from './notifier.js';
import { createLinkSigner } from './signing.js';
import { parseWebhooksConfig, type WebhooksConfig } from './webhooks-config.js';

export interface WebhooksPorts {
  /** The URL links are made under. */
  readonly baseUrl: () => string;
  readonly onFailure?: (message: string) => void;
  /** Tries of one event before it is given up. Default 20. */
  readonly maxAttempts?: number;
  /** Default the global `fetch`. */
  readonly fetch?: typeof fetch;
}

/** A server's webhooks and links (docs/protocol.md, Webhooks and signed links). */
export interface Webhooks {
  /** `GET` and `POST /a/:token`. */
  routes(context: ServerContext): Router;
  /** Stops sending and retrying. Idempotent. */
  dispose(): void;
}

/**
 * Follows the runtime's own committed frames (on an instance of a service: the runs it owns) and
 * sends its pause and resume events to the webhooks; serves the links they carry. Checked here too,
 * so a library caller's mistake fails when the server is built.
 */
export function createWebhooks(stepwise: Pick<Stepwise, 'frames'>, config: WebhooksConfig, ports: WebhooksPorts): Webhooks {
  const checked = parseWebhooksConfig(config);
  // Checked above: a config with pause webhooks has its link secret.
  const signer = checked.link_secret === undefined ? undefined : createLinkSigner(checked.link_secret);
  const deliverer = createDeliverer({
    ...(ports.onFailure ? { onFailure: ports.onFailure } : {}),
    ...(ports.fetch ? { fetch: ports.fetch } : {}),
    ...(ports.maxAttempts === undefined ? {} : { maxAttempts: ports.maxAttempts }),
  });
  const notifier: Subscription = createWebhookNotifier(stepwise.frames.events$, { config: checked, signer, deliverer, baseUrl: ports.baseUrl });
  return {
    routes: (context) => linkRoutes(context, signer),
    dispose: () => {
      notifier.unsubscribe();
      deliverer.dispose();
    },
  };
}
