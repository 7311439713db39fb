import type { SchedulerLike } from 'rxjs';
import { asJsonData } from '../core/json.js';
import { boundsProblem } from '../core/json-bounds.js';
import type { ToolCall } from '../core/turns.js';
import type { ToolErrorPolicy } from './define-tool.js';

/*
 * What a tool call comes to, as the loop and the model see it: its progress and its outcome, and how
 * an outcome is made from a result, an error or a refusal. Apart from the executor, which decides when
 * and how often a tool runs, because this is the shape of its answer, whatever ran.
 */

/** Why a call did not run at all. */
export type ToolRejection = 'unknown_tool' | 'not_allowed' | 'invalid_arguments' | 'args_changed';

export interface ToolOutcome {
  readonly tool_call_id: string;
  readonly name: string;
  readonly result: unknown;
  readonly error?: string;
  readonly rejected?: ToolRejection;
  readonly duration_ms?: number;
  /** The `abort` policy: this failure ends the run as failed. */
  readonly abortsRun: boolean;
}

/**
 * `started` when execution begins (with the validated arguments), then exactly one `finished`. `at`:
 * when, on the executor's clock, so the loop need not read the clock again (absent: it reads its own).
 */
export type ToolProgress =
  | { readonly type: 'started'; readonly args: unknown; readonly at?: number }
  | { readonly type: 'finished'; readonly outcome: ToolOutcome; readonly at?: number };

/**
 * Whether a tool's own value nests deeper than the bound: one too deep for JSON's writer comes out of
 * the conversion as a shallow note of its failure, so the value itself is what is measured. A value
 * whose walk fails (a throwing getter) is left to the conversion.
 */
function isTooDeep(result: unknown): boolean {
  try {
    return boundsProblem(result, { cutRepeats: true }) === 'too_deep';
  } catch {
    return false;
  }
}

/** The error of a call whose result is nested deeper than anything downstream may walk. */
export const RESULT_TOO_DEEP = 'result nested too deeply';

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Builds a call's `finished` progress from its result or error; the duration counts from `startedAt`. */
export type Finisher = (result: unknown, error?: unknown) => ToolProgress;

export function finisherOf(scheduler: SchedulerLike, call: ToolCall, startedAt: number, policy: ToolErrorPolicy): Finisher {
  return (result, error) => {
    const at = scheduler.now();
    const data = result === undefined ? null : asJsonData(result);
    // Only a value that was not plain JSON within a few levels is converted, and only it can be too
    // deep for the store and the wire (docs/protocol.md, Untrusted input): the model sees an error instead.
    const refused = data !== result && (boundsProblem(data) === 'too_deep' || isTooDeep(result));
    const failure = refused ? RESULT_TOO_DEEP : error === undefined ? undefined : messageOf(error);
    return {
      type: 'finished',
      outcome: {
        tool_call_id: call.id,
        name: call.name,
        result: refused ? null : data,
        ...(failure === undefined ? {} : { error: failure }),
        duration_ms: at - startedAt,
        abortsRun: error !== undefined && policy === 'abort',
      },
      at,
    };
  };
}

/** The outcome of a call refused before its tool ran: nothing ran, so no duration, and the reason named. */
export const rejected = (call: ToolCall, rejection: ToolRejection, error: string): ToolProgress => ({
  type: 'finished',
  outcome: { tool_call_id: call.id, name: call.name, result: null, error, rejected: rejection, abortsRun: false },
});
