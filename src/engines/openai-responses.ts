import type { ClientOptions } from 'openai';
import type { ResponseCreateParamsStreaming, ResponseFunctionToolCall, ResponseStreamEvent, Response } from 'openai/resources/responses/responses';
import { EngineError, type Engine, type EngineEvent, type InferenceRequest } from '../core/engine.js';
import { loadOpenAI } from './load-sdk.js';
import { malformedChunk, streamCut } from './provider-error.js';
import { streamInference, type ChunkAccumulator } from './stream-inference.js';
import { parseArgs } from './transcript.js';
import { toResponsesInput, toResponsesTools } from './transcript-openai.js';

export interface OpenAIResponsesEngineConfig {
  /** API key. Default: the SDK reads `OPENAI_API_KEY`. */
  readonly apiKey?: string;
  /** Base URL. Default: the SDK's (`OPENAI_BASE_URL` or api.openai.com). */
  readonly baseURL?: string;
  /** Model name. Default `gpt-5.4-mini`. */
  readonly model?: string;
  /** SDK retries on 408/409/429/5xx and connection errors. Default 2. */
  readonly maxRetries?: number;
  /** Reasoning options for reasoning models, e.g. `{ effort: 'low', summary: 'auto' }`. Default: not sent. */
  readonly reasoning?: ResponseCreateParamsStreaming['reasoning'];
  /** Any other SDK client option (headers, timeout, organization, custom fetch). */
  readonly clientOptions?: Omit<ClientOptions, 'apiKey' | 'baseURL' | 'maxRetries'>;
}

export const OPENAI_RESPONSES_DEFAULTS = Object.freeze({ model: 'gpt-5.4-mini', maxRetries: 2 });

const PROVIDER = 'OpenAI Responses';

/** An engine over the Responses API, stateless (`store: false`): the transcript is sent each step. */
export function createOpenAIResponsesEngine(config: OpenAIResponsesEngineConfig = {}): Engine {
  const model = config.model ?? OPENAI_RESPONSES_DEFAULTS.model;
  const maxRetries = config.maxRetries ?? OPENAI_RESPONSES_DEFAULTS.maxRetries;
  const sdk = loadOpenAI();
  const client = new sdk.OpenAI({ ...config.clientOptions, apiKey: config.apiKey, baseURL: config.baseURL, maxRetries });
  return {
    name: 'openai-responses',
    model,
    infer: (request) =>
      streamInference<ResponseStreamEvent>({
        provider: PROVIDER,
        maxRetries,
        errors: sdk,
        open: (signal) => client.responses.create(responsesBody(model, request, config.reasoning), { signal }),
        accumulator: () => createResponsesAccumulator(model),
      }),
  };
}

export function responsesBody(
  model: string,
  request: InferenceRequest,
  reasoning?: ResponseCreateParamsStreaming['reasoning'],
): ResponseCreateParamsStreaming {
  // The session owns the history, so nothing is stored server-side.
  const body: ResponseCreateParamsStreaming = { model, ...toResponsesInput(request.blocks), stream: true, store: false };
  if (reasoning) body.reasoning = reasoning;
  if (request.tools.length > 0) {
    body.tools = toResponsesTools(request.tools);
    if (request.toolChoice !== undefined) body.tool_choice = request.toolChoice;
    if (request.parallelToolCalls !== undefined) body.parallel_tool_calls = request.parallelToolCalls;
  }
  return body;
}

interface PartialCall {
  callId: string;
  name: string;
  args: string;
  emitted: boolean;
}

function createResponsesAccumulator(requestedModel: string): ChunkAccumulator<ResponseStreamEvent> {
  // Keyed by item id: argument deltas name the item, not the call.
  const calls = new Map<string, PartialCall>();
  let done = false;
  // The summary part the last reasoning delta belonged to: parts are paragraphs, so a new one starts on a blank line.
  let summaryPart: string | undefined;

  return {
    push(event) {
      if (typeof event?.type !== 'string') throw malformedChunk(PROVIDER, 'event has no type');
      switch (event.type) {
        case 'response.output_text.delta':
        case 'response.refusal.delta':
          return event.delta ? [{ type: 'text-delta', delta: event.delta }] : [];
        case 'response.reasoning_summary_text.delta': {
          if (!event.delta) return [];
          const part = `${event.item_id}:${event.summary_index}`;
          const separator = summaryPart !== undefined && summaryPart !== part ? '\n\n' : '';
          summaryPart = part;
          return [{ type: 'reasoning-delta', delta: separator + event.delta }];
        }
        case 'response.reasoning_text.delta':
          return event.delta ? [{ type: 'reasoning-delta', delta: event.delta }] : [];
        case 'response.output_item.added':
          if (event.item.type === 'function_call') {
            const { id, call_id, name, arguments: args } = event.item;
            calls.set(id ?? call_id, { callId: call_id, name, args: args ?? '', emitted: false });
          }
          return [];
        case 'response.function_call_arguments.delta':
          argumentsDelta(calls, event);
          return [];
        case 'response.output_item.done':
          return event.item.type === 'function_call' ? callDone(calls, event.item) : [];
        case 'response.failed': {
          const error = event.response.error;
          throw new EngineError(`${PROVIDER}: response failed: ${error?.message ?? 'no reason given'}`, error?.code ?? 'response_failed');
        }
        case 'response.completed':
        case 'response.incomplete': {
          done = true;
          // Calls whose item.done never came (should not happen) are still delivered, in order.
          const pending = [...calls.values()].filter((c) => !c.emitted).map(callEvent);
          return [...pending, finishedEvent(event.response, requestedModel, calls.size > 0)];
        }
        default:
          return [];
      }
    },
    end() {
      if (!done) throw streamCut(PROVIDER, 'response.completed arrived');
      return [];
    },
  };
}

function callEvent(call: PartialCall): EngineEvent {
  call.emitted = true;
  return { type: 'tool-call', id: call.callId, name: call.name, args: parseArgs(call.args) };
}

type EventOf<T extends ResponseStreamEvent['type']> = Extract<ResponseStreamEvent, { type: T }>;

/** A call's arguments arrive in pieces, naming its item. */
function argumentsDelta(calls: Map<string, PartialCall>, event: EventOf<'response.function_call_arguments.delta'>): void {
  const call = calls.get(event.item_id);
  if (!call) throw malformedChunk(PROVIDER, `arguments for unknown item ${event.item_id}`);
  call.args += event.delta;
}

/** A call's item is done: the call goes out, unless it already did. */
function callDone(calls: Map<string, PartialCall>, item: ResponseFunctionToolCall): EngineEvent[] {
  const call = calls.get(item.id ?? item.call_id) ?? { callId: item.call_id, name: item.name, args: '', emitted: false };
  // The done item carries the whole argument string; prefer it over our assembly when present.
  if (item.arguments) call.args = item.arguments;
  return call.emitted ? [] : [callEvent(call)];
}

/** The Responses API has no finish reason; report one in Chat Completions' vocabulary. */
function finishedEvent(response: Response, requestedModel: string, hasCalls: boolean): EngineEvent {
  const stopReason =
    response.status === 'incomplete' ? (response.incomplete_details?.reason ?? 'incomplete') : hasCalls ? 'tool_calls' : 'stop';
  return {
    type: 'finished',
    model: response.model || requestedModel,
    usage: { input_tokens: response.usage?.input_tokens ?? 0, output_tokens: response.usage?.output_tokens ?? 0 },
    stop_reason: stopReason,
  };
}
