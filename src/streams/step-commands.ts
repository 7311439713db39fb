import type { PauseInfo, ResumeReason } from './events.js';

/** What the operator decided at a pause. */
export type PauseDecision =
  | { readonly action: 'continue' }
  | { readonly action: 'deny'; readonly tool_call_ids?: readonly string[]; readonly reason: string }
  | { readonly action: 'edit'; readonly edits: Readonly<Record<string, unknown>> }
  /** Only from the `abort` timeout action: the run ends as failed. */
  | { readonly action: 'abort'; readonly reason: string };

/** A continue command, from the HTTP API, a test, or another process (one entry point: `submit`). */
export interface ContinueCommand {
  readonly pause_id: string;
  readonly action?: 'continue' | 'deny' | 'edit';
  readonly tool_call_ids?: readonly string[];
  readonly reason?: string;
  readonly edits?: Readonly<Record<string, unknown>>;
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
  | { readonly ok: true; readonly pause: PauseInfo }
  | { readonly ok: false; readonly error: StepCommandError };

/** Checks an edited argument object against the tool's schema: a list of issues, empty when valid. */
export type EditValidator = (toolCallId: string, args: unknown) => readonly string[];

/**
 * Validates a command against the pause it targets and turns it into a decision.
 * Pure: the controller calls it before anything is resolved, so a refused command changes nothing.
 */
export function decide(
  pause: PauseInfo,
  command: ContinueCommand,
  validateEdit: EditValidator,
): PauseDecision | StepCommandError {
  const action = command.action ?? 'continue';
  if (action === 'continue') return { action };
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
      const found = validateEdit(id, edits[id]);
      if (found.length > 0) issues[id] = found;
    }
    if (Object.keys(issues).length > 0) {
      return new StepCommandError('invalid_arguments', 'edited arguments do not match the tool schema', { edits: issues });
    }
    return { action, edits };
  }
  return new StepCommandError('invalid_action', `unknown action "${String(action)}" (continue, deny or edit)`);
}

/** The denial reason for this call under `decision`, or undefined when it may run. */
export function deniedBy(decision: PauseDecision | undefined, toolCallId: string): string | undefined {
  if (decision?.action !== 'deny') return undefined;
  const chosen = decision.tool_call_ids;
  return !chosen || chosen.length === 0 || chosen.includes(toolCallId) ? decision.reason : undefined;
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
    case 'abort':
      return 'timeout';
  }
}
