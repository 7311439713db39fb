import { isTextTooDeep, MAX_JSON_DEPTH } from '../core/json-bounds.js';
import { StoredRowError } from '../core/store-errors.js';
import type { ConversationRecord, RunCheckpoint, StoredPause, UnreadableRow } from '../core/store.js';
import type { Block, Turn } from '../core/turns.js';

/**
 * Rows read back by a durable store's recovery reads (docs/protocol.md, Durability), checked before
 * anything else touches them: a row a crash, a bug or a hand left malformed fails as a `StoredRowError`
 * naming it, which recovery turns into that one run ending `failed`, never into a failed start. The
 * depth is checked on the text, before it is parsed: everything after it (the wire, digests, the
 * store's next write) walks values recursively.
 */

/** The deepest a stored row may nest: a value bounded where it entered, inside the few levels of the row around it. */
export const STORED_JSON_DEPTH = MAX_JSON_DEPTH + 16;

/** What names a row in its error: built only when there is one (a restart reads 100 000 rows that have none). */
export type RowName = () => string;

/** A stored row's JSON, parsed; `what` names the row in the error. */
export function parseStored<T>(text: string, what: RowName): T {
  // A text can open no more containers than it has characters: a short row needs no count at all.
  if (text.length > STORED_JSON_DEPTH && opensMoreThan(text, STORED_JSON_DEPTH) && isTextTooDeep(text, STORED_JSON_DEPTH)) {
    throw new StoredRowError(what(), `it is nested deeper than ${STORED_JSON_DEPTH} levels`);
  }
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new StoredRowError(what(), `it does not parse (${(error as Error).message})`);
  }
}

/**
 * Whether the text opens more than `limit` objects and arrays in all, the only texts that can nest
 * deeper: most rows open a dozen, counted by the engine's own `indexOf`, and only the others are
 * scanned a character at a time, which took as long as parsing them.
 */
function opensMoreThan(text: string, limit: number): boolean {
  let count = 0;
  for (const bracket of OPENING) {
    for (let at = text.indexOf(bracket); at !== -1; at = text.indexOf(bracket, at + 1)) if (++count > limit) return true;
  }
  return false;
}

const OPENING = ['{', '['] as const;

/** The ids a run's checkpoint row is stored under. */
export interface CheckpointKey {
  readonly conv_id: string;
  readonly inference_id: string;
}

/**
 * A checkpoint row: its blocks, when its JSON holds them, checked as a turn's are. Its ids must be
 * the ones it is stored under: the run's end deletes it by them, and one that said others would be
 * restored again at every start.
 */
export function readCheckpoint(text: string, key: CheckpointKey): RunCheckpoint {
  const what = (): string => `the checkpoint of run ${key.inference_id}`;
  const value = parseStored<Record<string, unknown>>(text, what);
  const problem = checkpointProblem(value, key) ?? (value['blocks'] === undefined ? undefined : blocksProblem(value['blocks']));
  if (problem !== undefined) throw new StoredRowError(what(), problem);
  return value as unknown as RunCheckpoint;
}

/** A turn's (or a checkpoint's) blocks. */
export function readBlocks(text: string, what: RowName): Block[] {
  const value = parseStored<unknown>(text, what);
  const problem = blocksProblem(value);
  if (problem !== undefined) throw new StoredRowError(what(), problem);
  return value as Block[];
}

/** A pending pause row, stored under `pauseId` (which names it in the error: unknown, the row is read again with it). */
export function readPause(text: string, pauseId?: string): StoredPause {
  const what = (): string => `the pause ${pauseId ?? '?'}`;
  const value = parseStored<Record<string, unknown>>(text, what);
  const problem = pauseProblem(value);
  if (problem !== undefined) throw new StoredRowError(what(), problem);
  return value as unknown as StoredPause;
}

/** A conversation's record, stored under `convId` (which names it in the error: unknown, the row is read again with it). */
export function readRecord(text: string, convId?: string): ConversationRecord {
  const what = (): string => `the record of conversation ${convId ?? '?'}`;
  const value = parseStored<Record<string, unknown>>(text, what);
  const problem = recordProblem(value);
  if (problem !== undefined) throw new StoredRowError(what(), problem);
  return value as unknown as ConversationRecord;
}

/** `read()`, or undefined when it cannot be read back, the row then named in `unreadable` (when given). */
export function readOr<T>(read: () => T, unreadable: UnreadableRow[] | undefined, row: Omit<UnreadableRow, 'error'>): T | undefined {
  try {
    return read();
  } catch (error) {
    unreadable?.push({ ...row, error: messageOf(error) });
    return undefined;
  }
}

/**
 * Each row `read` can read back, in order; the others named in `unreadable` (when given) by `key`.
 * A loop, not `flatMap` with a closure per row: a restart reads every row of the store this way. Rows
 * may come straight from a statement's iterator, so that each row's text can go as soon as it is read.
 */
export function readRows<R, T>(rows: Iterable<R>, read: (row: R) => T, unreadable: UnreadableRow[] | undefined, key: (row: R) => Omit<UnreadableRow, 'error'>): T[] {
  const values: T[] = [];
  for (const row of rows) {
    try {
      values.push(read(row));
    } catch (error) {
      unreadable?.push({ ...key(row), error: messageOf(error) });
    }
  }
  return values;
}

/** A turn whose blocks could not be read: reading them throws what reading them threw. */
export function unreadableTurn(id: string, error: unknown): Turn {
  const failure = error instanceof StoredRowError ? error : new StoredRowError(`the blocks of turn ${id}`, messageOf(error));
  return {
    id,
    get blocks(): readonly Block[] {
      throw failure;
    },
  };
}

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isString = (value: unknown): value is string => typeof value === 'string';
const isCount = (value: unknown): boolean => Number.isInteger(value) && (value as number) >= 0;
const isStringList = (value: unknown): boolean => Array.isArray(value) && value.every(isString);
const PHASES: ReadonlySet<unknown> = new Set(['inference', 'after_inference', 'tools', 'after_tools']);
const PAUSE_PHASES: ReadonlySet<unknown> = new Set(['after_inference', 'after_tools']);
const BLOCK_KINDS: ReadonlySet<unknown> = new Set(['system', 'user', 'llm_text', 'tool_call', 'tool_use', 'reasoning']);

/** What is wrong with a checkpoint, checked as far as the loop relies on it; undefined when nothing. */
function checkpointProblem(value: unknown, key: CheckpointKey): string | undefined {
  if (!isObject(value)) return 'it is not an object';
  if (value['conv_id'] !== key.conv_id || value['inference_id'] !== key.inference_id) return 'its ids are not the ones it is stored under';
  if (!isString(value['session_id']) || !isString(value['turn_id'])) return 'its session_id or turn_id is not a string';
  if (!PHASES.has(value['next'])) return `its next phase ${JSON.stringify(value['next'])} is not a phase`;
  if (!isCount(value['iteration'])) return 'its iteration is not a count';
  const malformed = optionalFieldProblem(value as OptionalCheckpointFields);
  return malformed === undefined ? undefined : `its ${malformed} is malformed`;
}

/** A checkpoint's optional fields, as they may be stored. */
type OptionalCheckpointFields = Partial<Record<'decision' | 'allowed_tools' | 'max_iterations' | 'system_prompt' | 'profile' | 'resolved' | 'running_tool_call_ids' | 'at_ms' | 'usage', unknown>>;

/**
 * The first optional field present that is not what it must be, by name. Field by field rather than a
 * table of names: each name then reads a parsed row's field directly, where a name looked up from a
 * list is a generic keyed read, and a restart checks every checkpoint.
 */
function optionalFieldProblem(value: OptionalCheckpointFields): string | undefined {
  const { decision, allowed_tools, max_iterations, system_prompt, profile, resolved, running_tool_call_ids, at_ms, usage } = value;
  if (decision !== undefined && !isObject(decision)) return 'decision';
  if (allowed_tools !== undefined && !isStringList(allowed_tools)) return 'allowed_tools';
  if (max_iterations !== undefined && !isCount(max_iterations)) return 'max_iterations';
  if (system_prompt !== undefined && !isString(system_prompt)) return 'system_prompt';
  if (profile !== undefined && !isString(profile)) return 'profile';
  if (resolved !== undefined && !(isObject(resolved) && isString(resolved['pause_id']) && isObject(resolved['decision']))) return 'resolved';
  if (running_tool_call_ids !== undefined && !isStringList(running_tool_call_ids)) return 'running_tool_call_ids';
  if (at_ms !== undefined && !Number.isFinite(at_ms)) return 'at_ms';
  if (usage !== undefined && !(isObject(usage) && isCount(usage['input_tokens']) && isCount(usage['output_tokens']))) return 'usage';
  return undefined;
}

/** What is wrong with a list of blocks, as far as the loop and the wire rely on it; undefined when nothing. */
function blocksProblem(value: unknown): string | undefined {
  if (!Array.isArray(value)) return 'its blocks are not a list';
  for (let index = 0; index < value.length; index += 1) {
    const block: unknown = value[index];
    if (!isObject(block) || !isString(block['id']) || !BLOCK_KINDS.has(block['kind']) || !isObject(block['payload'])) return `its block ${index} is not a block`;
    const payload = block['payload'];
    if (block['kind'] === 'tool_call' && !(isString(payload['id']) && isString(payload['name']))) return `its tool call ${index} has no id or name`;
    if (block['kind'] === 'tool_use' && !isString(payload['id'])) return `its tool result ${index} has no id`;
  }
  return undefined;
}

function pauseProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'it is not an object';
  if (!isString(value['pause_id']) || !isString(value['conv_id']) || !isString(value['session_id']) || !isString(value['inference_id']) || !isString(value['turn_id'])) return 'its ids are not strings';
  if (!PAUSE_PHASES.has(value['phase'])) return `its phase ${JSON.stringify(value['phase'])} is not a pause phase`;
  if (!Number.isFinite(value['deadline_ms'])) return 'its deadline_ms is not a number';
  const calls = value['tool_calls'];
  if (!Array.isArray(calls) || !calls.every((call) => isObject(call) && isString(call['id']) && isString(call['name']))) return 'its tool_calls are malformed';
  return undefined;
}

function recordProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'it is not an object';
  if (!isString(value['conv_id']) || !isString(value['session_id']) || !Number.isFinite(value['created_at'])) return 'its session_id or created_at is malformed';
  const step = value['step'];
  if (!isObject(step) || typeof step['enabled'] !== 'boolean') return 'its step setting is malformed';
  return undefined;
}
