import { signatureOf } from './signing.js';
import type { Webhook } from './webhooks-config.js';

/** One event on its way to one webhook. */
export interface Delivery {
  readonly webhook: Webhook;
  /** The JSON body, signed as it is sent. */
  readonly body: string;
  /** Epoch ms after which it is no longer tried (the pause's deadline). */
  readonly until: number;
  /** Stops retrying once true (the pause was answered meanwhile). */
  readonly isMoot?: () => boolean;
}

export interface DeliveryConfig {
  /** Default the global `fetch`. */
  readonly fetch?: typeof fetch;
  /** The first retry's wait, doubled after each failure. Default 250 ms. */
  readonly firstRetryMs?: number;
  /** The longest wait between tries. Default 30 s. */
  readonly maxRetryMs?: number;
  /** The longest one try may take before it counts as failed. Default 10 s. */
  readonly attemptTimeoutMs?: number;
  /** Tries of one delivery, the first included, before it is given up even if its deadline is far. Default 20. */
  readonly maxAttempts?: number;
  /** Told about each failed try, in words that carry neither the secret nor the URL's query. */
  readonly onFailure?: (message: string) => void;
}

const DEFAULTS = Object.freeze({ firstRetryMs: 250, maxRetryMs: 30_000, attemptTimeoutMs: 10_000, maxAttempts: 20 });

export interface Deliverer {
  /** Starts delivering in the background; returns at once (the run never waits for a receiver). */
  send(delivery: Delivery): void;
  /** Stops every retry and aborts every try in flight. */
  dispose(): void;
}

/**
 * POSTs with retries (docs/protocol.md, Webhooks and signed links): each try is signed afresh with
 * its own timestamp (so a receiver may refuse stale ones), a 2xx ends it, anything else (a status, a
 * refused connection, a redirect, a try that hangs past its timeout) is tried again after a doubling
 * wait, until the deadline or `maxAttempts`, whichever comes first. Timers are unref'd: a receiver that
 * is away never keeps the process alive.
 */
export function createDeliverer(config: DeliveryConfig = {}): Deliverer {
  const { firstRetryMs, maxRetryMs, attemptTimeoutMs, maxAttempts } = { ...DEFAULTS, ...config };
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1) throw new Error(`webhooks: maxAttempts (webhookMaxAttempts) must be an integer of at least 1, got ${String(maxAttempts)}`);
  const post = config.fetch ?? fetch;
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Set<AbortController>();
  let disposed = false;

  const later = (run: () => void, ms: number): void => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      run();
    }, ms);
    timer.unref();
    timers.add(timer);
  };

  const attempt = async (delivery: Delivery, waitMs: number, tried: number): Promise<void> => {
    if (disposed || delivery.isMoot?.() || Date.now() >= delivery.until) return;
    const abort = new AbortController();
    inFlight.add(abort);
    const failure = await postSigned(post, delivery, abort, attemptTimeoutMs).finally(() => inFlight.delete(abort));
    if (failure === undefined || disposed) return;
    // A receiver that never takes it must not be tried until a far deadline: a pause may wait for days.
    if (tried + 1 >= maxAttempts) {
      config.onFailure?.(`webhook ${originOf(delivery.webhook.url)} ${failure}; not tried again (${maxAttempts} tries made)`);
      return;
    }
    // A try that could only start after the deadline is not scheduled: the pause is decided by then.
    if (Date.now() + waitMs >= delivery.until) {
      config.onFailure?.(`webhook ${originOf(delivery.webhook.url)} ${failure}; not tried again (the deadline comes first)`);
      return;
    }
    config.onFailure?.(`webhook ${originOf(delivery.webhook.url)} ${failure}; trying again in ${waitMs} ms`);
    later(() => void attempt(delivery, Math.min(maxRetryMs, waitMs * 2), tried + 1), waitMs);
  };

  return {
    send: (delivery) => {
      if (!disposed) void attempt(delivery, firstRetryMs, 0);
    },
    dispose: () => {
      disposed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const abort of inFlight) abort.abort();
    },
  };
}

/** One signed try: undefined when the receiver answered 2xx, else what went wrong, in words. */
async function postSigned(post: typeof fetch, delivery: Delivery, abort: AbortController, attemptTimeoutMs: number): Promise<string | undefined> {
  const timestamp = String(Date.now());
  const timeout = setTimeout(() => abort.abort(), Math.min(attemptTimeoutMs, Math.max(1, delivery.until - Date.now())));
  timeout.unref();
  try {
    const response = await post(delivery.webhook.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-stepwise-timestamp': timestamp, 'x-stepwise-signature': signatureOf(delivery.webhook.secret, timestamp, delivery.body) },
      body: delivery.body,
      signal: abort.signal,
      // Never followed: the receiver's address is the operator's choice, not the receiver's (a redirect
      // could send the signed body anywhere); a 3xx is a failed try like any status but a 2xx.
      redirect: 'manual',
    });
    // The receiver's body is not read: only its status matters, and reading could hang.
    void response.body?.cancel().catch(() => undefined);
    return response.ok ? undefined : `answered ${response.status}`;
  } catch (error) {
    return abort.signal.aborted ? 'did not answer in time' : `could not be reached (${(error as { cause?: { code?: string } }).cause?.code ?? 'network error'})`;
  } finally {
    clearTimeout(timeout);
  }
}

/** A webhook's URL as logs show it: its origin only, since a path or query may carry a token. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'webhook';
  }
}
