import type { Interrupt, ResumeEntry } from '@ag-ui/core';
import type { PauseInfo, PauseToolCall } from '../../core/pauses.js';
import type { ViewDecision } from '../run-view/view-decisions.js';

/** The reason of a question's interrupt (docs/ag-ui.md, Questions): the answer is the resume payload. */
export const QUESTION_REASON = 'input_required';

/** A question of a pause as an AG-UI interrupt: `responseSchema` is its answer schema, so a client can render a form. */
export function questionInterrupt(pause: PauseInfo, call: PauseToolCall, base: Omit<Interrupt, 'id' | 'reason'>): Interrupt {
  return {
    ...base,
    id: `${pause.pause_id}:${call.id}`,
    reason: QUESTION_REASON,
    toolCallId: call.id,
    responseSchema: call.answer_schema ?? {},
  };
}

/**
 * The answers a resume gives a pause's questions (docs/ag-ui.md, Questions), or undefined when it answers none
 * (each question cancelled: then the resume is an approval decision in which they are denied). Answering some
 * questions and cancelling others, or denying or editing another call while answering, is more than one decision:
 * `refuse` throws. The answers are checked against their schemas by the decision itself (a failure is
 * `invalid_resume`, and nothing changes).
 */
export function answersOf(
  pause: PauseInfo,
  answered: ReadonlyMap<string, ResumeEntry>,
  isPlainApproval: (entry: ResumeEntry | undefined) => boolean,
  refuse: (message: string) => never,
): ViewDecision | undefined {
  const entryOf = (call: PauseToolCall): ResumeEntry | undefined => answered.get(`${pause.pause_id}:${call.id}`);
  const questions = pause.tool_calls.filter((call) => call.answer_schema !== undefined);
  const resolved = questions.filter((call) => entryOf(call)?.status === 'resolved');
  if (resolved.length === 0) return undefined;
  if (resolved.length < questions.length) refuse('a resume answers every question of the pause, or cancels them all');
  const others = pause.tool_calls.filter((call) => call.answer_schema === undefined);
  if (!others.every((call) => isPlainApproval(entryOf(call)))) {
    refuse('a resume that answers questions approves the other calls as they are; deny or edit them in a resume without answers');
  }
  const answers: Record<string, unknown> = {};
  for (const call of questions) answers[call.id] = entryOf(call)?.payload ?? null;
  return { action: 'answer', answers };
}
