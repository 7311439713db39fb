import type { ClientOptions } from '@anthropic-ai/sdk';
import type { MessageCreateParamsStreaming, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import type { Engine, EngineEvent, InferenceRequest, Usage } from '../core/engine.js';
import { loadAnthropic } from './load-sdk.js';
import { malformedChunk, streamCut } from './provider-error.js';
import { streamInference, type ChunkAccumulator } from './stream-inference.js';
import { parseArgs } from './transcript.js';
import { toAnthropicMessages, toAnthropicToolChoice, toAnthropicTools } from './transcript-anthropic.js';

export interface AnthropicEngineConfig {
  /** API key. Default: the SDK reads `ANTHROPIC_API_KEY`. */
  readonly apiKey?: string;
  /** Base URL. Default: the SDK's (`ANTHROPIC_BASE_URL` or api.anthropic.com). */
  readonly baseURL?: string;
  /** Model name. Default `claude-sonnet-4-6`. */
  readonly model?: string;
  /** `max_tokens` per inference (required by the API). Default 8192. */
  readonly maxTokens?: number;
  /** SDK retries on 408/409/429/5xx and connection errors. Default 2. */
  readonly maxRetries?: number;
  /** Any other SDK client option (headers, timeout, custom fetch). */
  readonly clientOptions?: Omit<ClientOptions, 'apiKey' | 'baseURL' | 'maxRetries'>;
}

export const ANTHROPIC_DEFAULTS = Object.freeze({ model: 'claude-sonnet-4-6', maxTokens: 8192, maxRetries: 2 });

const PROVIDER = 'Anthropic Messages';

/** An engine over the Messages streaming API. */
export function createAnthropicEngine(config: AnthropicEngineConfig = {}): Engine {
  const model = config.model ?? ANTHROPIC_DEFAULTS.model;
  const maxTokens = config.maxTokens ?? ANTHROPIC_DEFAULTS.maxTokens;
  const maxRetries = config.maxRetries ?? ANTHROPIC_DEFAULTS.maxRetries;
  const sdk = loadAnthropic();
  const client = new sdk.Anthropic({ ...config.clientOptions, apiKey: config.apiKey, baseURL: config.baseURL, maxRetries });
  return {
    name: 'anthropic',
    model,
    infer: (request) =>
      streamInference<RawMessageStreamEvent>({
        provider: PROVIDER,
        maxRetries,
        errors: sdk,
        open: (signal) => client.messages.create(anthropicBody(model, maxTokens, request), { signal }),
        accumulator: () => createAnthropicAccumulator(model),
      }),
  };
}

export function anthropicBody(model: string, maxTokens: number, request: InferenceRequest): MessageCreateParamsStreaming {
  const body: MessageCreateParamsStreaming = { model, max_tokens: maxTokens, ...toAnthropicMessages(request.blocks), stream: true };
  if (request.tools.length > 0) {
    body.tools = toAnthropicTools(request.tools);
    const choice = toAnthropicToolChoice(request);
    if (choice) body.tool_choice = choice;
  }
  return body;
}

interface OpenBlock {
  kind: 'text' | 'tool_use' | 'other';
  id: string;
  name: string;
  json: string;
  /** `input` from content_block_start, used when no input_json_delta follows. */
  initial: unknown;
}

interface UsageFields {
  readonly input_tokens?: number | null;
  readonly output_tokens?: number | null;
  readonly cache_creation_input_tokens?: number | null;
  readonly cache_read_input_tokens?: number | null;
}

function createAnthropicAccumulator(requestedModel: string): ChunkAccumulator<RawMessageStreamEvent> {
  const blocks = new Map<number, OpenBlock>();
  let model = requestedModel;
  let usage: Usage = { input_tokens: 0, output_tokens: 0 };
  let stopReason: string | null = null;
  let stopped = false;

  return {
    push(event) {
      if (typeof event?.type !== 'string') throw malformedChunk(PROVIDER, 'event has no type');
      switch (event.type) {
        case 'message_start':
          model = event.message.model || model;
          usage = mergeUsage(usage, event.message.usage);
          return [];
        case 'content_block_start':
          return startBlock(blocks, event);
        case 'content_block_delta':
          return blockDelta(blocks, event);
        case 'content_block_stop': {
          const block = blocks.get(event.index);
          blocks.delete(event.index);
          if (block?.kind !== 'tool_use') return [];
          const args = block.json === '' ? (block.initial ?? {}) : parseArgs(block.json);
          return [{ type: 'tool-call', id: block.id, name: block.name, args }];
        }
        case 'message_delta':
          stopReason = event.delta.stop_reason ?? stopReason;
          usage = mergeUsage(usage, event.usage);
          return [];
        case 'message_stop':
          stopped = true;
          return [{ type: 'finished', model, usage, stop_reason: stopReason } satisfies EngineEvent];
        default:
          return [];
      }
    },
    end() {
      if (!stopped) throw streamCut(PROVIDER, 'message_stop arrived');
      return [];
    },
  };
}

type EventOf<T extends RawMessageStreamEvent['type']> = Extract<RawMessageStreamEvent, { type: T }>;

/** A content block opens: a tool call is gathered until it stops; text and thinking may start with some already. */
function startBlock(blocks: Map<number, OpenBlock>, event: EventOf<'content_block_start'>): EngineEvent[] {
  const block = event.content_block;
  if (block.type === 'tool_use') {
    blocks.set(event.index, { kind: 'tool_use', id: block.id, name: block.name, json: '', initial: block.input });
    return [];
  }
  blocks.set(event.index, { kind: block.type === 'text' ? 'text' : 'other', id: '', name: '', json: '', initial: undefined });
  if (block.type === 'text' && block.text) return [{ type: 'text-delta', delta: block.text }];
  if (block.type === 'thinking' && block.thinking) return [{ type: 'reasoning-delta', delta: block.thinking }];
  return [];
}

/** Text and thinking pass on at once; a tool call's JSON is gathered until its block stops. */
function blockDelta(blocks: Map<number, OpenBlock>, event: EventOf<'content_block_delta'>): EngineEvent[] {
  const delta = event.delta;
  if (delta.type === 'text_delta') return delta.text ? [{ type: 'text-delta', delta: delta.text }] : [];
  if (delta.type === 'thinking_delta') return delta.thinking ? [{ type: 'reasoning-delta', delta: delta.thinking }] : [];
  if (delta.type === 'input_json_delta') {
    const block = blocks.get(event.index);
    if (block?.kind !== 'tool_use') throw malformedChunk(PROVIDER, `input_json_delta for block ${event.index} that is not a tool_use`);
    block.json += delta.partial_json;
  }
  return [];
}

/** message_delta usage is cumulative; input counts include cache reads and writes. */
function mergeUsage(previous: Usage, next: UsageFields | null | undefined): Usage {
  if (!next) return previous;
  const hasInput = next.input_tokens != null;
  const input = (next.input_tokens ?? 0) + (next.cache_creation_input_tokens ?? 0) + (next.cache_read_input_tokens ?? 0);
  return {
    input_tokens: hasInput ? input : previous.input_tokens,
    output_tokens: next.output_tokens ?? previous.output_tokens,
  };
}
