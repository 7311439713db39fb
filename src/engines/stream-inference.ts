import { catchError, throwError, type Observable } from 'rxjs';
import { fromAbortable } from '../core/abortable.js';
import type { EngineEvent } from '../core/engine.js';
import { toEngineError, type SdkErrorClasses } from './provider-error.js';

/**
 * Folds one provider's stream chunks into engine events. Created per inference, so its state
 * (partial tool arguments, usage so far) never leaks between subscriptions.
 */
export interface ChunkAccumulator<Chunk> {
  /** Events this chunk completes; throws an EngineError for a chunk the provider should not send. */
  push(chunk: Chunk): readonly EngineEvent[];
  /** Called when the stream ended normally: the closing events, or a throw if it ended too early. */
  end(): readonly EngineEvent[];
}

export interface StreamInferenceConfig<Chunk> {
  /** Human-readable provider name used in error messages, e.g. `OpenAI Chat Completions`. */
  readonly provider: string;
  /** The SDK's retry budget, quoted in HTTP error messages. */
  readonly maxRetries: number;
  /** The SDK's error classes, from the copy its client came from (see load-sdk.ts). */
  readonly errors: SdkErrorClasses;
  /** Starts the SDK's streaming call; the signal must reach the SDK so unsubscribing aborts the HTTP request. */
  readonly open: (signal: AbortSignal) => Promise<AsyncIterable<Chunk>>;
  readonly accumulator: () => ChunkAccumulator<Chunk>;
}

/**
 * The one place an SDK stream meets RxJS: cold, one HTTP request per subscription, aborted on
 * unsubscribe, and every failure (HTTP, socket, parse, early end) surfaced as an EngineError.
 */
export function streamInference<Chunk>(config: StreamInferenceConfig<Chunk>): Observable<EngineEvent> {
  const { provider, maxRetries, errors, open, accumulator } = config;
  async function* run(signal: AbortSignal): AsyncGenerator<EngineEvent> {
    const stream = await open(signal);
    const state = accumulator();
    for await (const chunk of stream) yield* state.push(chunk);
    // The SDKs end their iterator quietly on abort; an aborted stream has no meaningful end.
    if (signal.aborted) return;
    yield* state.end();
  }
  return fromAbortable(run).pipe(catchError((error: unknown) => throwError(() => toEngineError(provider, error, maxRetries, errors))));
}
