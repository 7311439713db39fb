import type { Instance, Service } from './service.js';

/** One HTTP exchange with one instance: its answer, or why there was none. */
export interface Outcome {
  readonly instance: number;
  /** When it was sent (epoch ms), to line it up with the servers' logs. */
  readonly at: number;
  readonly ms: number;
  /** Absent when no answer came (refused, reset, timed out). */
  readonly status?: number;
  readonly body?: any;
  /** Retry-After, when the answer had one, ms. */
  readonly retryAfterMs?: number;
  /** Why there was no answer: `ECONNREFUSED`, `ECONNRESET`, `timeout`, …. */
  readonly failure?: string;
}

/** How long one request may take before the harness counts it as unanswered. */
const REQUEST_TIMEOUT_MS = 10_000;

export async function send(instance: Instance, method: string, path: string, body?: unknown, timeoutMs = REQUEST_TIMEOUT_MS): Promise<Outcome> {
  const at = Date.now();
  const start = performance.now();
  const elapsed = (): number => performance.now() - start;
  try {
    const reply = await fetch(`${instance.base}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await reply.text();
    const retryAfter = Number(reply.headers.get('retry-after'));
    return {
      instance: instance.index,
      at,
      ms: elapsed(),
      status: reply.status,
      body: parseJson(text),
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
    };
  } catch (error) {
    return { instance: instance.index, at, ms: elapsed(), failure: failureOf(error) };
  }
}

/**
 * Why an outcome is worth sending again, or undefined when it is final. Documented retryable answers:
 * 503 (`store_unavailable` while Redis is unreachable, `owner_unavailable` when the owner did not answer
 * a forwarded request); no answer at all (an instance killed, restarting) is retried on another instance.
 */
export function retryCause(outcome: Outcome): string | undefined {
  if (outcome.failure !== undefined) return outcome.failure;
  if (outcome.status === 503) return `503 ${outcome.body?.error?.code ?? 'unknown'}`;
  return undefined;
}

/**
 * Whether an earlier attempt may have taken effect though its answer was lost: the request reached an
 * instance (reset or timeout, not refused), or a 503 says its outcome is unknown (the instance running the
 * conversation did not answer in time, or the store did not confirm the write: docs/protocol.md, Several
 * instances). Any other 503 took no effect, so a decision found recorded after one is a violation.
 */
export function mayHaveApplied(outcome: Outcome): boolean {
  if (outcome.failure !== undefined) return outcome.failure !== 'ECONNREFUSED';
  return outcome.status === 503 && outcome.body?.error?.details?.outcome === 'unknown';
}

export interface RetryConfig {
  /** Stop retrying after this long, ms. */
  readonly budgetMs: number;
  /** Told each retried outcome's cause, for the report's count. */
  readonly onRetry: (cause: string) => void;
  readonly signal?: AbortSignal;
  /** The first instance to ask; later attempts go to any live one. Default any live one. */
  readonly first?: Instance;
  /** Per attempt; default 10 s. A listing of every pause or conversation of 100 000 runs takes longer. */
  readonly timeoutMs?: number;
}

/** Sends until a final answer (or the budget runs out: then the last outcome), with every attempt kept. */
export async function sendRetrying(service: Service, method: string, path: string, body: unknown, config: RetryConfig): Promise<Outcome[]> {
  const end = Date.now() + config.budgetMs;
  const attempts: Outcome[] = [];
  for (let attempt = 0; ; attempt += 1) {
    const instance = attempt === 0 && config.first ? config.first : service.pick(attempts.at(-1)?.instance);
    const outcome = await send(instance, method, path, body, config.timeoutMs);
    attempts.push(outcome);
    const cause = retryCause(outcome);
    if (cause === undefined || Date.now() > end || config.signal?.aborted) return attempts;
    config.onRetry(cause);
    // Retry-After when the server says; else a short exponential backoff: a restart takes about a second.
    await sleep(outcome.retryAfterMs ?? Math.min(1000, 50 * 2 ** attempt) * (0.5 + Math.random() / 2));
  }
}

/** A time of day with milliseconds, as the servers' log lines in the kept dir have it (UTC). */
export const clock = (at: number): string => new Date(at).toISOString().slice(11, 23);

export const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function failureOf(error: unknown): string {
  const name = (error as { name?: string }).name;
  if (name === 'TimeoutError' || name === 'AbortError') return 'timeout';
  const cause = (error as { cause?: { code?: string } }).cause;
  return cause?.code ?? (error as Error).message ?? String(error);
}
