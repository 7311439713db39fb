import { EngineError } from '../core/engine.js';

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * The error classes both SDKs define under these names. Passed in by the engine rather than imported here,
 * so classifying an OpenAI error never loads the Anthropic SDK (or the other way round).
 */
export interface SdkErrorClasses {
  readonly APIError: ErrorClass;
  readonly APIConnectionError: ErrorClass;
  readonly APIConnectionTimeoutError: ErrorClass;
}

/**
 * Turns whatever an SDK call threw into one {@link EngineError} with a stable code, so the loop
 * can report provider failures as values without knowing the SDKs.
 */
export function toEngineError(provider: string, error: unknown, maxRetries: number, sdk: SdkErrorClasses): EngineError {
  if (error instanceof EngineError) return error;
  const err = error as { name?: string; message?: string; status?: unknown; cause?: unknown; type?: unknown; code?: unknown };
  const message = typeof err?.message === 'string' ? err.message : String(error);
  if (typeof err?.status === 'number') {
    const retried = err.status === 429 || err.status === 408 || err.status === 409 || err.status >= 500;
    const after = retried && maxRetries > 0 ? ` after ${maxRetries} retries` : '';
    return new EngineError(`${provider}: HTTP ${err.status}${after}: ${message}`, `http_${err.status}`, err.status);
  }
  if (err?.name === 'SyntaxError') {
    return new EngineError(`${provider}: malformed stream chunk: ${message}`, 'malformed_chunk');
  }
  if (isSocketCut(err)) {
    return new EngineError(`${provider}: the stream was cut mid-way (${message})`, 'stream_cut');
  }
  if (error instanceof sdk.APIConnectionTimeoutError) return new EngineError(`${provider}: request timed out`, 'timeout');
  if (error instanceof sdk.APIConnectionError) {
    const cause = (err.cause as { message?: string } | undefined)?.message;
    return new EngineError(`${provider}: connection failed: ${cause ?? message}`, 'connection_error');
  }
  if (error instanceof sdk.APIError) {
    // An error event inside an otherwise successful stream (OpenAI `insufficient_quota`, Anthropic `overloaded_error`).
    const code = [err.code, err.type].find((c): c is string => typeof c === 'string' && c !== '') ?? 'stream_error';
    return new EngineError(`${provider}: ${message}`, code);
  }
  return new EngineError(`${provider}: ${message}`, 'provider_error');
}

/** undici reports a socket closed mid-body as `TypeError: terminated` with a socket-level cause. */
function isSocketCut(err: { name?: string; message?: string; cause?: unknown }): boolean {
  if (err?.name !== 'TypeError') return false;
  const cause = err.cause as { code?: string } | undefined;
  return err.message === 'terminated' || (cause?.code ?? '').startsWith('UND_ERR_SOCKET');
}

/** A stream that ended without its terminal event: the connection closed cleanly but too early. */
export function streamCut(provider: string, missing: string): EngineError {
  return new EngineError(`${provider}: the stream ended before ${missing}`, 'stream_cut');
}

/** A chunk that parsed as JSON but does not have the provider's shape. */
export function malformedChunk(provider: string, detail: string): EngineError {
  return new EngineError(`${provider}: malformed stream chunk: ${detail}`, 'malformed_chunk');
}
