import { argsDigest } from '../core/args-digest.js';
import { boundsProblem, MAX_JSON_DEPTH, TOO_DEEP, TOO_DEEP_MESSAGE } from '../core/json-bounds.js';
import type { Observable } from 'rxjs';
import type { PauseDecision, ResultEdit } from '../core/pauses.js';
import type { PauseInfo, ResumeReason } from './events.js';

export type { PauseDecision, ResultEdit } from '../core/pauses.js';

/** A continue command, from the HTTP API, a test, or another process (one entry point: `submit`). */
export interface ContinueCommand {
  readonly pause_id: string;
  readonly action?: 'continue' | 'deny' | 'edit' | 'answer';
  readonly tool_call_ids?: readonly string[];
  readonly reason?: string;
  readonly edits?: Readonly<Record<string, unknown>>;
  /** `edit` at `after_tools`: new results (JSON values) by tool_call_id, replacing what the model will see. */
  readonly results?: Readonly<Record<string, unknown>>;
  /** `answer` at a pause with questions: the answers by tool_call_id (docs/protocol.md, Questions for a human). */
  readonly answers?: Readonly<Record<string, unknown>>;
  /** Who continued, for the `resumed` event (a user name, `redis:host`, …). */
  readonly by?: string;
}

/** How a pause ended. */
export interface PauseResolution {
  readonly pause: PauseInfo;
  readonly reason: ResumeReason;
  readonly decision: PauseDecision;
  readonly by?: string;
}

export type StepErrorCode = 'unknown_pause' | 'pause_resolved' | 'invalid_action' | 'invalid_arguments';

/** Why a continue command was refused. Distinct codes for an unknown pause and an already resolved one. */
export class StepCommandError extends Error {
  override readonly name = 'StepCommandError';
  constructor(
    readonly code: StepErrorCode,
    message: string,
    readonly details?: Readonly<Record<string, unknown>>,
  ) {
    super(message);
  }
}

export type SubmitResult =
  | {
      readonly ok: true;
      readonly pause: PauseInfo;
      /**
       * Completes once the decision is committed; errors with the store's failure when it was not, and
       * then it took no effect: the pause is pending again (docs/protocol.md, A 200 means committed).
       */
      readonly committed$: Observable<never>;
    }
  | { readonly ok: false; readonly error: StepCommandError };

/** Checks edited arguments for one call of `pause` against its tool's schema: a list of issues, empty when valid. */
export type EditValidator = (toolCallId: string, args: unknown, pause: PauseInfo) => readonly string[];

/**
 * Validates a command against the pause it targets and turns it into a decision.
 * Pure: the controller calls it before anything is resolved, so a refused command changes nothing.
 */
export function decide(
  pause: PauseInfo,
  command: ContinueCommand,
  validateEdit: EditValidator,
  /** At `after_tools`: the results that may be replaced, by tool_call_id. */
  results: Readonly<Record<string, unknown>> = {},
): PauseDecision | StepCommandError {
  const action = command.action ?? 'continue';
  if (command.answers !== undefined) return new StepCommandError('invalid_action', `"answers" go with action "answer", not "${action}"`);
  if (action === 'continue') return { action };
  if (command.results !== undefined && (action !== 'edit' || pause.phase !== 'after_tools')) {
    return new StepCommandError('invalid_action', `"results" can only be edited at after_tools (action "edit"), not at ${pause.phase} with "${action}"`);
  }
  if (pause.phase === 'after_tools' && action === 'edit') return decideResults(command, results);
  if (pause.phase !== 'after_inference') {
    return new StepCommandError('invalid_action', `only "continue" is valid at ${pause.phase}, got "${action}"`);
  }
  const known = new Set(pause.tool_calls.map((call) => call.id));
  if (action === 'deny') {
    const unknown = (command.tool_call_ids ?? []).filter((id) => !known.has(id));
    if (unknown.length > 0) {
      return new StepCommandError('invalid_action', `unknown tool_call_ids: ${unknown.join(', ')}`, { tool_call_ids: unknown });
    }
    const chosen = command.tool_call_ids && command.tool_call_ids.length > 0 ? { tool_call_ids: command.tool_call_ids } : {};
    return { action, reason: command.reason?.trim() || 'no reason given', ...chosen };
  }
  if (action === 'edit') {
    const edits = command.edits ?? {};
    const ids = Object.keys(edits);
    if (ids.length === 0) return new StepCommandError('invalid_action', 'edit needs "edits": {tool_call_id: args}');
    const unknown = ids.filter((id) => !known.has(id));
    if (unknown.length > 0) {
      return new StepCommandError('invalid_action', `unknown tool_call_ids: ${unknown.join(', ')}`, { tool_call_ids: unknown });
    }
    const issues: Record<string, readonly string[]> = {};
    for (const id of ids) {
      const found = validateEdit(id, edits[id], pause);
      if (found.length > 0) issues[id] = found;
    }
    if (Object.keys(issues).length > 0) {
      return new StepCommandError('invalid_arguments', 'edited arguments do not match the tool schema', { edits: issues });
    }
    return { action, edits };
  }
  return new StepCommandError('invalid_action', `unknown action "${String(action)}" (continue, deny, edit or answer)`);
}

/** An `edit` at `after_tools`: every id a result of this pause, every value JSON. */
function decideResults(command: ContinueCommand, originals: Readonly<Record<string, unknown>>): PauseDecision | StepCommandError {
  if (command.edits !== undefined) return new StepCommandError('invalid_action', 'at after_tools, edit takes "results", not "edits"');
  const ids = Object.keys(command.results ?? {});
  if (ids.length === 0) return new StepCommandError('invalid_action', 'edit at after_tools needs "results": {tool_call_id: value}');
  const unknown = ids.filter((id) => !Object.hasOwn(originals, id));
  if (unknown.length > 0) {
    return new StepCommandError('invalid_action', `not a tool result of this pause: ${unknown.join(', ')}`, { tool_call_ids: unknown });
  }
  const results: Record<string, ResultEdit> = {};
  const notJson: string[] = [];
  for (const id of ids) {
    const after = command.results?.[id];
    if (isJson(after)) results[id] = { before: originals[id], after };
    else notJson.push(id);
  }
  if (notJson.length > 0) {
    return new StepCommandError('invalid_arguments', `edited results must be JSON values: ${notJson.join(', ')}`, { results: notJson });
  }
  return { action: 'edit', edits: {}, results };
}

/**
 * A command whose values nest deeper than anything downstream may walk (docs/protocol.md, Untrusted
 * input): refused before it is checked further. The HTTP API refuses such a body before it is parsed;
 * this is for commands from the library and the other ports.
 */
export function tooDeep(command: Pick<ContinueCommand, 'edits' | 'results' | 'answers'>): StepCommandError | undefined {
  for (const field of ['edits', 'results', 'answers'] as const) {
    const values = command[field];
    if (values !== undefined && boundsProblem(values, { maxDepth: MAX_JSON_DEPTH + 1 }) !== undefined) {
      return new StepCommandError('invalid_arguments', `"${field}" ${TOO_DEEP_MESSAGE}`, { [field]: TOO_DEEP });
    }
  }
  return undefined;
}

/** A JSON value: what a model can be shown and a store can keep (no undefined, functions, NaN, class instances or cycles). */
export function isJson(value: unknown, seen: Set<object> = new Set()): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || seen.has(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return false;
  seen.add(value);
  const ok = Object.values(value).every((item) => isJson(item, seen));
  seen.delete(value);
  return ok;
}

/** The denial reason for this call under `decision`, or undefined when it may run. */
export function deniedBy(decision: PauseDecision | undefined, toolCallId: string): string | undefined {
  if (decision?.action !== 'deny') return undefined;
  const chosen = decision.tool_call_ids;
  return !chosen || chosen.length === 0 || chosen.includes(toolCallId) ? decision.reason : undefined;
}

/** Whether `decision` answers this call, a question (docs/protocol.md, Questions for a human): its result is the answer and no code runs. */
export function isAnswered(decision: PauseDecision | undefined, toolCallId: string): boolean {
  return decision?.action === 'answer' && Object.hasOwn(decision.answers, toolCallId);
}

/** The reason a decision resumes with. */
export function reasonOf(decision: PauseDecision): ResumeReason {
  switch (decision.action) {
    case 'continue':
      return 'continued';
    case 'deny':
      return 'denied';
    case 'edit':
      return 'edited';
    case 'answer':
      return 'answered';
    case 'abort':
      return 'timeout';
  }
}

/**
 * A resolution with its decision bound to what will run (docs/protocol.md, Approvals bound to what runs): at
 * `after_inference`, `args_digests` holds the digest of each call that is not denied, over its arguments after
 * edits. The executor recomputes it just before the call runs. A cancelled run and an aborted one run nothing,
 * and `after_tools` has no calls to run: those are left as they are.
 */
export function bindResolution(resolution: PauseResolution): PauseResolution {
  const { pause, decision, reason } = resolution;
  if (pause.phase !== 'after_inference' || reason === 'cancelled' || decision.action === 'abort') return resolution;
  return { ...resolution, decision: bindDecision(decision, pause.tool_calls) };
}

/** `decision` with `args_digests` for `calls` (id and the model's `input`) that it lets run. */
export function bindDecision(decision: PauseDecision, calls: readonly { readonly id: string; readonly input: unknown }[]): PauseDecision {
  if (decision.action === 'abort') return decision;
  const digests: Record<string, string> = {};
  for (const call of calls) {
    if (deniedBy(decision, call.id) !== undefined) continue;
    const args = decision.action === 'edit' && Object.hasOwn(decision.edits, call.id) ? decision.edits[call.id] : call.input;
    digests[call.id] = argsDigest(args);
  }
  return { ...decision, args_digests: digests };
}
