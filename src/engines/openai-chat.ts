import type { ClientOptions } from 'openai';
import type { ChatCompletionChunk, ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import type { Engine, EngineEvent, InferenceRequest } from '../core/engine.js';
import { loadOpenAI } from './load-sdk.js';
import { malformedChunk, streamCut } from './provider-error.js';
import { streamInference, type ChunkAccumulator } from './stream-inference.js';
import { parseArgs } from './transcript.js';
import { toChatMessages, toChatTools } from './transcript-openai.js';

export interface OpenAIChatEngineConfig {
  /** API key. Default: the SDK reads `OPENAI_API_KEY`. Local servers accept any non-empty string. */
  readonly apiKey?: string;
  /** Base URL, e.g. `http://127.0.0.1:11434/v1` for Ollama. Default: the SDK's (`OPENAI_BASE_URL` or api.openai.com). */
  readonly baseURL?: string;
  /** Model name. Default `gpt-5.4-mini`. */
  readonly model?: string;
  /** SDK retries on 408/409/429/5xx and connection errors. Default 2. */
  readonly maxRetries?: number;
  /** Ask for usage in the stream (`stream_options.include_usage`). Default true; turn off for servers that reject it. */
  readonly includeUsage?: boolean;
  /** Any other SDK client option (headers, timeout, organization, custom fetch). */
  readonly clientOptions?: Omit<ClientOptions, 'apiKey' | 'baseURL' | 'maxRetries'>;
}

export const OPENAI_CHAT_DEFAULTS = Object.freeze({ model: 'gpt-5.4-mini', maxRetries: 2, includeUsage: true });

const PROVIDER = 'OpenAI Chat Completions';

/** An engine over the Chat Completions streaming API; works with OpenAI-compatible servers too. */
export function createOpenAIChatEngine(config: OpenAIChatEngineConfig = {}): Engine {
  const model = config.model ?? OPENAI_CHAT_DEFAULTS.model;
  const maxRetries = config.maxRetries ?? OPENAI_CHAT_DEFAULTS.maxRetries;
  const includeUsage = config.includeUsage ?? OPENAI_CHAT_DEFAULTS.includeUsage;
  const sdk = loadOpenAI();
  const client = new sdk.OpenAI({ ...config.clientOptions, apiKey: config.apiKey, baseURL: config.baseURL, maxRetries });
  return {
    name: 'openai',
    model,
    infer: (request) =>
      streamInference<ChatCompletionChunk>({
        provider: PROVIDER,
        maxRetries,
        errors: sdk,
        open: (signal) => client.chat.completions.create(chatBody(model, request, includeUsage), { signal }),
        accumulator: () => createChatAccumulator(model),
      }),
  };
}

export function chatBody(model: string, request: InferenceRequest, includeUsage: boolean): ChatCompletionCreateParamsStreaming {
  const body: ChatCompletionCreateParamsStreaming = { model, messages: toChatMessages(request.blocks), stream: true };
  if (includeUsage) body.stream_options = { include_usage: true };
  // The API rejects tool_choice and parallel_tool_calls when no tools are sent.
  if (request.tools.length > 0) {
    body.tools = toChatTools(request.tools);
    if (request.toolChoice !== undefined) body.tool_choice = request.toolChoice;
    if (request.parallelToolCalls !== undefined) body.parallel_tool_calls = request.parallelToolCalls;
  }
  return body;
}

/** Fields compatible servers (DeepSeek, vLLM, Ollama, llama.cpp) use for reasoning text. */
interface ReasoningDelta {
  readonly reasoning_content?: string | null;
  readonly reasoning?: string | null;
}

interface PartialCall {
  id: string;
  name: string;
  args: string;
}

function createChatAccumulator(requestedModel: string): ChunkAccumulator<ChatCompletionChunk> {
  const calls = new Map<number, PartialCall>();
  let model = requestedModel;
  let stopReason: string | null = null;
  let finished = false;
  let usage = { input_tokens: 0, output_tokens: 0 };

  return {
    push(chunk) {
      if (!Array.isArray(chunk.choices)) throw malformedChunk(PROVIDER, 'chunk has no choices array');
      if (chunk.model) model = chunk.model;
      if (chunk.usage) usage = { input_tokens: chunk.usage.prompt_tokens ?? 0, output_tokens: chunk.usage.completion_tokens ?? 0 };
      const events: EngineEvent[] = [];
      // n = 1: only the first choice is ours.
      const choice = chunk.choices[0];
      if (!choice) return events;
      const delta = (choice.delta ?? {}) as ChatCompletionChunk.Choice.Delta & ReasoningDelta;
      // `||`: a server may send an empty string in one field and the text in the other.
      const reasoning = delta.reasoning_content || delta.reasoning;
      if (reasoning) events.push({ type: 'reasoning-delta', delta: reasoning });
      if (delta.content) events.push({ type: 'text-delta', delta: delta.content });
      if (delta.refusal) events.push({ type: 'text-delta', delta: delta.refusal });
      delta.tool_calls?.forEach((fragment, position) => {
        // Some compatible servers omit `index` when they send whole calls in one chunk.
        const index = fragment.index ?? position;
        const call = calls.get(index) ?? { id: '', name: '', args: '' };
        if (fragment.id) call.id = fragment.id;
        // Replaced, not appended, as the SDK's own ChatCompletionStream does: some servers repeat it per fragment.
        if (fragment.function?.name) call.name = fragment.function.name;
        if (fragment.function?.arguments) call.args += fragment.function.arguments;
        calls.set(index, call);
      });
      if (choice.finish_reason && !finished) {
        finished = true;
        stopReason = choice.finish_reason;
        events.push(...completedCalls(calls));
      }
      return events;
    },
    end() {
      if (!finished) throw streamCut(PROVIDER, 'a finish_reason arrived');
      return [{ type: 'finished', model, usage, stop_reason: stopReason }];
    },
  };
}

function completedCalls(calls: Map<number, PartialCall>): EngineEvent[] {
  return [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, call]) => {
      if (!call.name) throw malformedChunk(PROVIDER, `tool call at index ${index} has no function name`);
      return { type: 'tool-call' as const, id: call.id || `call_${index}`, name: call.name, args: parseArgs(call.args) };
    });
}
