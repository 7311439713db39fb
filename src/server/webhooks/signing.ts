import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhooksConfig } from './webhooks-config.js';

/**
 * The signature of a webhook POST (docs/protocol.md, Webhooks and signed links): `sha256=` and the hex
 * HMAC-SHA256, keyed with the webhook's secret, of the timestamp, a dot and the body as sent.
 */
export function signatureOf(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** What a receiver checks: the signature matches, compared in constant time. */
export function isValidSignature(secret: string, timestamp: string, body: string, signature: string): boolean {
  const expected = Buffer.from(signatureOf(secret, timestamp, body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** The actions a link may take: one link per action (docs/protocol.md, Webhooks and signed links). */
export type LinkAction = 'continue' | 'deny';

/** What a link is good for: one pause, one action, until the pause's deadline. */
export interface LinkClaims {
  readonly pause_id: string;
  readonly conv_id: string;
  readonly action: LinkAction;
  /** Epoch ms: the pause's deadline, after which the link is refused. */
  readonly deadline_ms: number;
}

export interface LinkSigner {
  sign(claims: LinkClaims): string;
  /** The claims of a token this key signed; undefined for anything else (forged, altered, malformed). */
  verify(token: string): LinkClaims | undefined;
}

/**
 * The key links are signed with: the file's `link_secret`, else one derived from every webhook's
 * secret, so every instance started with the same file signs and accepts the same links.
 */
export function linkKeyOf(config: WebhooksConfig): Buffer {
  const material = config.link_secret ?? JSON.stringify(config.webhooks.map((webhook) => webhook.secret).sort());
  return createHmac('sha256', 'stepwise signed links v1').update(material).digest();
}

/**
 * Tokens `<claims>.<mac>`, both base64url: the claims as JSON, the mac their HMAC-SHA256 under the
 * link key. Nothing is stored: any instance holding the key checks a token by itself, and single use
 * comes from the pause itself (a second decision is 409 `pause_resolved`).
 */
export function createLinkSigner(key: Buffer): LinkSigner {
  const macOf = (payload: string): Buffer => createHmac('sha256', key).update(payload).digest();
  return {
    sign: (claims) => {
      const payload = Buffer.from(JSON.stringify({ p: claims.pause_id, c: claims.conv_id, a: claims.action, e: claims.deadline_ms })).toString('base64url');
      return `${payload}.${macOf(payload).toString('base64url')}`;
    },
    verify: (token) => {
      const [payload, mac, extra] = token.split('.');
      if (payload === undefined || mac === undefined || extra !== undefined || token.length > 2048) return undefined;
      const given = Buffer.from(mac, 'base64url');
      const expected = macOf(payload);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      return claimsOf(payload);
    },
  };
}

function claimsOf(payload: string): LinkClaims | undefined {
  try {
    const { p, c, a, e } = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (typeof p !== 'string' || typeof c !== 'string' || (a !== 'continue' && a !== 'deny') || typeof e !== 'number') return undefined;
    return { pause_id: p, conv_id: c, action: a, deadline_ms: e };
  } catch {
    return undefined;
  }
}
