import { createDeliverer } from '../../src/server/webhooks/delivery.js';
import { createLinkSigner, isValidSignature, signatureOf } from '../../src/server/webhooks/signing.js';

const webhook = { url: 'http://127.0.0.1:9/hook?token=private', secret: 'unit-secret-0123456789' };

/** A fetch that answers each try with the next status and records the tries. */
function scriptedFetch(statuses: readonly number[], onTry: (count: number) => void = () => undefined) {
  const tries: { headers: Record<string, string>; body: string; redirect: RequestRedirect | undefined }[] = [];
  const fetchFn = (async (_url: string, init: RequestInit) => {
    tries.push({ headers: init.headers as Record<string, string>, body: String(init.body), redirect: init.redirect });
    onTry(tries.length);
    return new Response(null, { status: statuses[Math.min(tries.length - 1, statuses.length - 1)] ?? 500 });
  }) as unknown as typeof fetch;
  return { tries, fetchFn };
}

describe('webhook delivery', () => {
  it('should sign each try afresh and stop at the first 2xx', async () => {
    let third = (): void => undefined;
    const done = new Promise<void>((resolve) => (third = resolve));
    const { tries, fetchFn } = scriptedFetch([500, 503, 204], (count) => count === 3 && third());
    const lines: string[] = [];
    createDeliverer({ fetch: fetchFn, firstRetryMs: 1, onFailure: (line) => lines.push(line) }).send({ webhook, body: '{"type":"pause"}', until: Date.now() + 60_000 });
    await done;
    // The 204's handling is a few microtasks away: a macrotask later it is done (and nothing was scheduled).
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(tries).toHaveLength(3);
    for (const { headers, body } of tries) expect(isValidSignature(webhook.secret, headers['x-stepwise-timestamp'] as string, body, headers['x-stepwise-signature'] as string)).toBe(true);
    expect(lines).toEqual([expect.stringContaining('answered 500; trying again in 1 ms'), expect.stringContaining('answered 503; trying again in 2 ms')]);
    // The URL's path and query (which may hold a token) and the secret stay out of what is logged.
    expect(lines.join('\n')).not.toMatch(/\/hook|private|unit-secret/);
  });

  it('should not try again once the pause is answered, nor past the deadline', async () => {
    const answered = scriptedFetch([500]);
    let resolvedAfter = 2;
    const moot = new Promise<void>((resolve) => {
      createDeliverer({ fetch: answered.fetchFn, firstRetryMs: 1 }).send({
        webhook,
        body: '{}',
        until: Date.now() + 60_000,
        isMoot: () => (answered.tries.length >= resolvedAfter ? (resolve(), true) : false),
      });
    });
    await moot;
    expect(answered.tries).toHaveLength(2);
    resolvedAfter = Infinity;

    const late = scriptedFetch([500]);
    const gaveUp = new Promise<string>((resolve) => {
      createDeliverer({ fetch: late.fetchFn, firstRetryMs: 60_000, onFailure: resolve }).send({ webhook, body: '{}', until: Date.now() + 30_000 });
    });
    expect(await gaveUp).toContain('not tried again (the deadline comes first)');
    expect(late.tries).toHaveLength(1);
    const expired = scriptedFetch([204]);
    createDeliverer({ fetch: expired.fetchFn }).send({ webhook, body: '{}', until: Date.now() - 1 });
    expect(expired.tries).toHaveLength(0);
  });

  it('should never follow a redirect, count it as a failed try, and stop after maxAttempts', async () => {
    const redirected = scriptedFetch([302, 307, 301, 204]);
    const lines: string[] = [];
    const gaveUp = new Promise<void>((resolve) => {
      createDeliverer({ fetch: redirected.fetchFn, firstRetryMs: 1, maxAttempts: 3, onFailure: (line) => (lines.push(line), line.includes('not tried again') && resolve()) }).send({
        webhook,
        body: '{}',
        until: Date.now() + 60_000,
      });
    });
    await gaveUp;
    await new Promise<void>((resolve) => setTimeout(resolve, 20));
    expect(redirected.tries.map((item) => item.redirect)).toEqual(['manual', 'manual', 'manual']);
    expect(lines).toEqual([
      expect.stringContaining('answered 302; trying again in 1 ms'),
      expect.stringContaining('answered 307; trying again in 2 ms'),
      expect.stringContaining('answered 301; not tried again (3 tries made)'),
    ]);
    expect(() => createDeliverer({ maxAttempts: 0 })).toThrow(/maxAttempts/);
  });
});

describe('signed links', () => {
  it('should verify its own tokens only, and the signature format of docs/protocol.md', () => {
    const signer = createLinkSigner('unit-link-secret-0123456789');
    const claims = { pause_id: 'pause_1', conv_id: 'c1', action: 'deny' as const, deadline_ms: 1_700_000_000_000 };
    const token = signer.sign(claims);
    expect(signer.verify(token)).toEqual(claims);
    expect(createLinkSigner('other-link-secret-0123456789').verify(token)).toBeUndefined();
    const [payload, mac] = token.split('.') as [string, string];
    const altered = Buffer.from(JSON.stringify({ p: 'pause_2', c: 'c1', a: 'deny', e: claims.deadline_ms })).toString('base64url');
    for (const bad of [`${altered}.${mac}`, `${payload}.`, payload, `${token}.x`, '', '..']) expect(signer.verify(bad)).toBeUndefined();
    // Spellings Node's decoder reads as the same bytes: padding, stray characters, other unused bits.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const lastBits = [1, 2, 3].map((flip) => `${token.slice(0, -1)}${alphabet[alphabet.indexOf(token.at(-1) as string) ^ flip]}`);
    for (const respelled of [...lastBits, `${token}=`, `${token}==`, `${payload}=.${mac}`, `${payload}.${mac.slice(0, 10)}*${mac.slice(10)}`, `${payload}.${mac.replaceAll('-', '+').replaceAll('_', '/')}`, ` ${token}`]) {
      if (respelled === token) continue;
      expect(signer.verify(respelled)).toBeUndefined();
    }
    for (const respelled of lastBits) expect(Buffer.from(respelled.split('.')[1] as string, 'base64url')).toEqual(Buffer.from(mac, 'base64url'));
    expect(signatureOf('s', '1700000000000', '{}')).toMatch(/^sha256=[0-9a-f]{64}$/);
  });
});
