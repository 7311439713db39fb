import type { Observable } from 'rxjs';
import type { Block } from '../core/turns.js';
import type { JsonValue } from './store.js';

/** JSON Schema, as advertised to providers. */
export type JsonSchema = Record<string, unknown>;

/** A tool as the model sees it: name, description and the JSON Schema of its arguments. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
}

export type ToolChoice = 'auto' | 'none' | 'required';

/** One inference: the whole transcript so far and the tools the model may call. */
export interface InferenceRequest {
  readonly conv_id: string;
  readonly session_id: string;
  readonly inference_id: string;
  /** The model message this request starts, `<inference_id>:<n>` (n counts the run's inferences from 1): its `llm.*` frames' id. */
  readonly message_id?: string;
  readonly turn_id: string;
  /** History then the current turn, oldest first; `system` blocks carry the system prompt. */
  readonly blocks: readonly Block[];
  /** Only the allowed tools; empty means none are advertised. */
  readonly tools: readonly ToolSpec[];
  readonly toolChoice?: ToolChoice;
  readonly parallelToolCalls?: boolean;
}

export interface Usage {
  readonly input_tokens: number;
  readonly output_tokens: number;
}

/**
 * What an engine streams during one inference. Tool calls arrive whole (fragments assembled by the
 * engine); arguments that were not valid JSON arrive as the raw string, so schema validation turns
 * them into an error result the model sees.
 */
export type EngineEvent =
  | { readonly type: 'text-delta'; readonly delta: string }
  | { readonly type: 'reasoning-delta'; readonly delta: string }
  | { readonly type: 'tool-call'; readonly id: string; readonly name: string; readonly args: unknown }
  | {
      readonly type: 'finished';
      readonly model: string;
      readonly usage: Usage;
      readonly stop_reason: string | null;
    };

/**
 * The engine port. `infer` is cold: subscribing sends the request, unsubscribing aborts it.
 * A provider failure is an error notification carrying an {@link EngineError}.
 */
export interface Engine {
  readonly name: string;
  readonly model: string;
  infer(request: InferenceRequest): Observable<EngineEvent>;
  /** Drops what the engine keeps per conversation (the scripted engine's cursor). Optional. */
  forget?(convId: string): void;
  /**
   * What the engine keeps per conversation, as JSON (the scripted engine's position in its script), so a durable
   * store can keep it across a restart (docs/protocol.md, Script file and Durability). Undefined when it keeps
   * nothing. Optional.
   */
  state?(convId: string): JsonValue | undefined;
  /** Puts back what `state` returned, before the conversation's next inference. Optional. */
  restore?(convId: string, state: JsonValue): void;
}

/** A provider or script failure, with an optional machine-readable code (e.g. `http_429`, `stream_cut`). */
export class EngineError extends Error {
  override readonly name = 'EngineError';
  constructor(
    message: string,
    readonly code?: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Wraps an engine: system prompts, reordering, logging. */
export type EngineMiddleware = (engine: Engine) => Engine;

/** `[A, B, C]` reads "A wraps B wraps C wraps the engine". */
export function withMiddlewares(engine: Engine, middlewares: readonly EngineMiddleware[]): Engine {
  return middlewares.reduceRight((wrapped, middleware) => middleware(wrapped), engine);
}
