import { z } from 'zod';

/** The events a webhook may ask for (docs/protocol.md, Webhooks and signed links). */
export const WEBHOOK_EVENTS = ['pause', 'resume'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** One receiver: where events are POSTed, the secret their signature is made with, and which events. */
export interface Webhook {
  readonly url: string;
  readonly secret: string;
  /** Default `["pause"]`. */
  readonly events?: readonly WebhookEvent[];
}

/**
 * The webhooks file's shape, and `createStepwiseServer`'s `webhooks` option. Links are signed with
 * `link_secret` and nothing else: a key a receiver could compute from its own secret would let it mint
 * links. Required as soon as a webhook gets `pause` events (the only ones with links); instances of a
 * service started with the same file accept each other's links.
 */
export interface WebhooksConfig {
  readonly webhooks: readonly Webhook[];
  readonly link_secret?: string;
}

const secret = z.string().min(16, 'must be at least 16 characters').max(4096);
const webhookSchema = z
  .object({
    url: z.string().max(2048).refine(isHttpUrl, 'must be an http:// or https:// URL'),
    secret,
    events: z.array(z.enum(WEBHOOK_EVENTS)).min(1).max(2).optional(),
  })
  .strict();
const configSchema = z
  .object({ webhooks: z.array(webhookSchema).min(1).max(100), link_secret: secret.optional() })
  .strict()
  .superRefine((config, issues) => {
    if (config.link_secret === undefined && usesLinks(config)) {
      issues.addIssue({ code: z.ZodIssueCode.custom, path: ['link_secret'], message: 'is required for signed links (a webhook gets pause events, which carry them)' });
    }
    // A receiver knows its own secret: signing links with it would let that receiver mint them.
    const index = config.webhooks.findIndex((webhook) => webhook.secret === config.link_secret);
    if (index !== -1) issues.addIssue({ code: z.ZodIssueCode.custom, path: ['link_secret'], message: `must differ from every webhook's secret (webhooks.${index}.secret is the same)` });
  });

function isHttpUrl(text: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

/**
 * Checks a webhooks file's JSON. Throws with the offending fields' paths and zod's words, never their
 * values: a message must not carry a secret into a log.
 */
export function parseWebhooksConfig(value: unknown): WebhooksConfig {
  const parsed = configSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'the file'}: ${issue.message}`);
  throw new Error(`webhooks: ${problems.join('; ')}`);
}

/** The events a webhook gets. */
export const eventsOf = (webhook: Webhook): readonly WebhookEvent[] => webhook.events ?? ['pause'];

/** Whether links are made: only `pause` events carry them. */
export const usesLinks = (config: Pick<WebhooksConfig, 'webhooks'>): boolean => config.webhooks.some((webhook) => eventsOf(webhook).includes('pause'));
