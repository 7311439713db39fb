import { charsWithin } from '../core/json-bounds.js';
import type { Block, ToolCallBlock } from '../core/turns.js';
import type { EngineEvent } from '../core/engine.js';

/**
 * What an inference's answer holds as it streams in, and which of the model's tool calls may enter it as
 * they are (docs/protocol.md, Untrusted input): the model's output is untrusted input, checked here once,
 * where it enters the turn.
 */

/** The model's answer as it streams in; each inference folds into its own. */
export interface Answer {
  text: string;
  reasoning: string;
  /** Reasoning comes first; whatever follows it (text, a call, the end) closes it. */
  reasoningOpen: boolean;
  readonly calls: ToolCallBlock[];
  finished?: Extract<EngineEvent, { type: 'finished' }>;
  /** Text of the arguments kept so far (see `refusalOf`). */
  argsChars: number;
  /** Calls refused as they came (see `refusalOf`): their `tool_use` errors follow the answer. */
  refused?: { readonly id: string; readonly name: string; readonly error: string }[];
}

export const emptyAnswer = (): Answer => ({ text: '', reasoning: '', reasoningOpen: false, calls: [], argsChars: 0 });

/**
 * Whether the answer or the turn so far has a call with this id already: a short scan, where a Set per
 * inference cost heap every step. A turn's `tool_use` blocks are matched to calls by id, so a model
 * repeating an id of an earlier step would otherwise answer its new call with the old result.
 */
export function hasCall(answer: Answer, blocks: readonly Block[], id: string): boolean {
  for (const call of answer.calls) if (call.payload.id === id) return true;
  for (const block of blocks) if (block.kind === 'tool_call' && block.payload.id === id) return true;
  return false;
}

/**
 * A provider's call id, when it is one a transcript can carry. Decisions key their edits, answers and
 * digests by call id: an id that names a property every object has would be read from its prototype.
 */
export const isUsableId = (id: unknown): id is string =>
  typeof id === 'string' && id.length > 0 && id.length <= MAX_CALL_ID_LENGTH && !(id.length <= LONGEST_PROTOTYPE_NAME && PROTOTYPE_NAMES.has(id));
const MAX_CALL_ID_LENGTH = 256;
/**
 * The names every object has, read once: `id in Object.prototype` interns each new id into the
 * engine's string table first, a cost every call paid for ids that are all different. A provider's
 * ids are longer than any of these names, so most are ruled out by their length alone.
 */
const PROTOTYPE_NAMES: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));
const LONGEST_PROTOTYPE_NAME = Math.max(...[...PROTOTYPE_NAMES].map((name) => name.length));

/**
 * Why the model's arguments are refused where they enter (docs/protocol.md, Untrusted input), if they
 * are: past this point digests, validation, the store and the wire walk them. A refused call gets a
 * `tool_use` error the model sees, never a pause, and nothing runs. The answer's calls share one budget
 * of text: what fits is kept, in the order the calls came.
 */
export function refusalOf(answer: Answer, args: unknown): string | undefined {
  const found = charsWithin(args, MAX_ARGS_CHARS - answer.argsChars);
  if (typeof found === 'number') {
    answer.argsChars += found;
    return undefined;
  }
  return found === 'too_deep' ? ARGS_TOO_DEEP : ARGS_TOO_LARGE;
}
/** As much text as a request body may hold: what a client may not send in one request, a model may not in one answer. */
const MAX_ARGS_CHARS = 1024 * 1024;
export const ARGS_TOO_DEEP = 'arguments nested too deeply';
export const ARGS_TOO_LARGE = 'arguments too large';
