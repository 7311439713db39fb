import type { PauseInfo, PauseToolCall } from '../streams/events.js';
import type { ContinueCommand } from '../streams/step-commands.js';
import type { Tool } from '../tools/define-tool.js';

/**
 * Typed builders of continue commands. They produce the same plain JSON that `controller.submit`
 * and `POST /debug/continue` take (the schema check at run time stays), but an edit's arguments are
 * checked at compile time against the tool's zod schema:
 *
 *   const weather = defineTool({ name: 'get_weather', parameters: z.object({ city: z.string() }), execute });
 *   const pause = await run.nextPause();
 *   controller.submit(editWith(pause, editCall(weather, pause.tool_calls[0], { city: 'Paris' })));
 *   editCall(weather, 'call_1', { town: 'Paris' }); // does not compile
 *
 * The arguments are typed as the schema's output (what `execute` receives); for a schema without
 * transforms or defaults that is also what it accepts.
 */

/** The arguments a tool's `execute` takes, as its schema types them. */
export type ArgsOf<T> = T extends Tool<infer Args> ? Args : never;

/** One call's new arguments. */
export interface ToolEdit {
  readonly tool_call_id: string;
  readonly args: unknown;
}

/** A pause, or its id. */
export type PauseRef = string | Pick<PauseInfo, 'pause_id'>;

const pauseIdOf = (pause: PauseRef): string => (typeof pause === 'string' ? pause : pause.pause_id);

/**
 * New arguments for one call of `tool`. `call` is its id or the call as the pause lists it; given the
 * call, its name must be the tool's (a mismatch is a programmer error and throws).
 */
export function editCall<Args>(tool: Tool<Args>, call: string | PauseToolCall, args: NoInfer<Args>): ToolEdit {
  if (typeof call !== 'string' && call.name !== tool.name) {
    throw new TypeError(`editCall: call ${call.id} is a call of "${call.name}", not of "${tool.name}"`);
  }
  return { tool_call_id: typeof call === 'string' ? call : call.id, args };
}

/** `{pause_id, action: 'edit', edits: {tool_call_id: args}}` from typed edits. */
export function editWith(pause: PauseRef, ...edits: readonly ToolEdit[]): ContinueCommand {
  const byId: Record<string, unknown> = {};
  for (const edit of edits) byId[edit.tool_call_id] = edit.args;
  return { pause_id: pauseIdOf(pause), action: 'edit', edits: byId };
}

/** `{pause_id, action: 'deny', reason, tool_call_ids?}`: no ids denies every call. */
export function denyWith(pause: PauseRef, reason: string, toolCallIds?: readonly string[]): ContinueCommand {
  return { pause_id: pauseIdOf(pause), action: 'deny', reason, ...(toolCallIds ? { tool_call_ids: toolCallIds } : {}) };
}

/** `{pause_id, action: 'continue'}`. */
export function continueWith(pause: PauseRef): ContinueCommand {
  return { pause_id: pauseIdOf(pause), action: 'continue' };
}

/** `{pause_id, action: 'edit', results: {tool_call_id: value}}`: replaces results at an `after_tools` pause. */
export function editResults(pause: PauseRef, results: Readonly<Record<string, unknown>>): ContinueCommand {
  return { pause_id: pauseIdOf(pause), action: 'edit', results };
}

/** `{pause_id, action: 'answer', answers: {tool_call_id: value}}`: answers the questions of a pause (docs/protocol.md, Questions for a human). */
export function answerWith(pause: PauseRef, answers: Readonly<Record<string, unknown>>): ContinueCommand {
  return { pause_id: pauseIdOf(pause), action: 'answer', answers };
}
