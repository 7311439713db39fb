import type { Engine, EngineMiddleware, InferenceRequest } from '../core/engine.js';
import { messageId } from '../core/message-ids.js';
import type { Block } from '../core/turns.js';
import { keepNewest } from '../core/bounded-map.js';

/**
 * What was sent to the model, per inference (issue 12: "each inference shows what was sent to the
 * model"): the engine port's request, kept as it was handed over.
 *
 * Why a record and not a rebuild from the stored turns: the transcript part could be rebuilt (a
 * request's blocks are a prefix of the conversation's), but the rest cannot. A run's own system
 * prompt and tool allow-list (the `/chat` overrides) are stored only in its checkpoint, which is
 * deleted when the run ends; and an MCP tool advertised then may have been withdrawn since (its
 * server died). A debugger that shows a guess as "what was sent" misleads, so this keeps the real one.
 *
 * Bounded: the newest `perConversation` requests of the `maxConversations` conversations used most
 * recently. A request holds references to the blocks the session keeps anyway (one array of
 * pointers) and the advertised specs, never a copy of the transcript. Held in memory: after a
 * restart, the requests of before are not known (the route says so).
 */
export interface InferenceLogConfig {
  /** Requests kept per conversation, newest first out of the window. Default 20. */
  readonly perConversation?: number;
  /** Conversations with requests kept; the least recently used is dropped first. Default 1000. */
  readonly maxConversations?: number;
}

export interface InferenceLog {
  /**
   * Outermost middleware: names the model message from the request the loop sends (other middlewares
   * may reorder or add blocks, so the name is read before they run).
   */
  readonly name: EngineMiddleware;
  /** Innermost middleware: keeps the request exactly as the engine receives it, after every other middleware. */
  readonly capture: EngineMiddleware;
  /** The request of one model message (`<inference_id>:<n>`, the `llm.*` frames' id), when still kept. */
  get(convId: string, messageId: string): InferenceRequest | undefined;
  /** The kept message ids of a conversation, oldest first. */
  messageIds(convId: string): string[];
  readonly limits: Required<InferenceLogConfig>;
}

const DEFAULT_PER_CONVERSATION = 20;
const DEFAULT_MAX_CONVERSATIONS = 1000;

export function createInferenceLog(config: InferenceLogConfig = {}): InferenceLog {
  const limits = {
    perConversation: config.perConversation ?? DEFAULT_PER_CONVERSATION,
    maxConversations: config.maxConversations ?? DEFAULT_MAX_CONVERSATIONS,
  };
  // Insertion order is recency: a conversation moves to the end each time it records.
  const conversations = new Map<string, Map<string, InferenceRequest>>();

  const keep = (messageId: string, request: InferenceRequest): void => {
    const convId = request.conv_id;
    const requests = conversations.get(convId) ?? new Map<string, InferenceRequest>();
    keepNewest(conversations, convId, requests, limits.maxConversations);
    keepNewest(requests, messageId, request, limits.perConversation);
  };

  // The message each run's inference in flight starts (one at a time per run), from `name` to `capture`.
  const naming = new Map<string, string>();

  return {
    name: (engine) => wrap(engine, (request) => {
      // A middleware that answers without the engine leaves its name here: bounded all the same.
      keepNewest(naming, request.inference_id, messageIdOf(request), limits.maxConversations);
    }),
    capture: (engine) => wrap(engine, (request) => {
      const messageId = naming.get(request.inference_id) ?? messageIdOf(request);
      naming.delete(request.inference_id);
      keep(messageId, request);
    }),
    get: (convId, messageId) => conversations.get(convId)?.get(messageId),
    messageIds: (convId) => [...(conversations.get(convId)?.keys() ?? [])],
    limits,
  };
}

/**
 * The engine with `see` told each request first. An object spread, not a class: an engine's optional
 * methods (`forget`, `state`, `restore`) are bound so a class-based engine keeps its `this`.
 */
function wrap(engine: Engine, see: (request: InferenceRequest) => void): Engine {
  return {
    name: engine.name,
    model: engine.model,
    infer: (request) => {
      see(request);
      return engine.infer(request);
    },
    ...(engine.forget ? { forget: engine.forget.bind(engine) } : {}),
    ...(engine.state ? { state: engine.state.bind(engine) } : {}),
    ...(engine.restore ? { restore: engine.restore.bind(engine) } : {}),
  };
}

/**
 * The model message a request starts: `<inference_id>:<n>`, as the `llm.*` frames name it, where n
 * counts the run's inferences from 1 (going on after a restart). The loop says it on the request;
 * for a request a middleware built without it, read from the blocks: each
 * inference of a run but the first follows one tools phase, which appended its `tool_use` blocks in
 * one stretch after the model's answer, and a run's turn begins with its one `user` block.
 */
export function messageIdOf(request: Pick<InferenceRequest, 'inference_id' | 'message_id' | 'blocks'>): string {
  return request.message_id ?? messageId(request.inference_id, 1 + toolPhasesOfTurn(request.blocks));
}

function toolPhasesOfTurn(blocks: readonly Block[]): number {
  let phases = 0;
  for (let index = blocks.length - 1; index >= 0; index -= 1) {
    const block = blocks[index] as Block;
    if (block.kind === 'user') break;
    if (block.kind === 'tool_use' && blocks[index - 1]?.kind !== 'tool_use') phases += 1;
  }
  return phases;
}
