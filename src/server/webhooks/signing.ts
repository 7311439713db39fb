import { createHmac, timingSafeEqual } from 'node:crypto';

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

/** Two base64url texts without padding, joined by a dot: the only alphabet `sign` writes. */
const TOKEN = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Tokens `<claims>.<mac>`, both base64url: the claims as JSON, the mac their HMAC-SHA256 under a key
 * of the file's `link_secret` alone (never a webhook's secret, which its receiver knows). Nothing is
 * stored: any instance holding the secret checks a token by itself, and single use comes from the
 * pause itself (a second decision is 409 `pause_resolved`).
 */
export function createLinkSigner(linkSecret: string): LinkSigner {
  // Its own key, so the link secret is never used as is for anything but deriving it.
  const key = createHmac('sha256', 'stepwise signed links v1').update(linkSecret).digest();
  const macOf = (payload: string): Buffer => createHmac('sha256', key).update(payload).digest();
  return {
    sign: (claims) => {
      const payload = Buffer.from(JSON.stringify({ p: claims.pause_id, c: claims.conv_id, a: claims.action, e: claims.deadline_ms })).toString('base64url');
      return `${payload}.${macOf(payload).toString('base64url')}`;
    },
    verify: (token) => {
      if (token.length > 2048 || !TOKEN.test(token)) return undefined;
      const [payload, mac] = token.split('.') as [string, string];
      // Node's decoder skips padding, stray characters and the unused low bits of the last one, so
      // several texts decode to one MAC: only the text `sign` writes for those bytes is the token.
      const given = Buffer.from(mac, 'base64url');
      if (given.toString('base64url') !== mac) return undefined;
      const expected = macOf(payload);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      return claimsOf(payload);
    },
  };
}

function claimsOf(payload: string): LinkClaims | undefined {
  // Signed, so written by `sign`; checked all the same, so that one spelling holds for both halves.
  const bytes = Buffer.from(payload, 'base64url');
  if (bytes.toString('base64url') !== payload) return undefined;
  try {
    const { p, c, a, e } = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    if (typeof p !== 'string' || typeof c !== 'string' || (a !== 'continue' && a !== 'deny') || typeof e !== 'number') return undefined;
    return { pause_id: p, conv_id: c, action: a, deadline_ms: e };
  } catch {
    return undefined;
  }
}
