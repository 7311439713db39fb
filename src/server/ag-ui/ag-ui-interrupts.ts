import type { Interrupt, ResumeEntry } from '@ag-ui/core';
import { z } from 'zod';
import type { PauseInfo } from '../../core/pauses.js';
import type { ViewDecision } from '../run-view/view-decisions.js';
import { answersOf, questionInterrupt } from './ag-ui-questions.js';

/** The reason of the one interrupt of an `after_tools` pause (docs/ag-ui.md, Interrupts). */
export const AFTER_TOOLS_REASON = 'stepwise:after_tools';

/**
 * A pause as AG-UI interrupts (docs/ag-ui.md, Interrupts): one per pending call at `after_inference`,
 * `<pause_id>:<tool_call_id>`, answered `{approved, editedArgs?, reason?}`; one `<pause_id>` at
 * `after_tools`, answered `{results?}`. `expiresAt` is the pause's deadline, when its timeout action
 * decides instead. `parametersOf` gives a tool's JSON Schema, for `editedArgs`.
 */
export function interruptsOf(pause: PauseInfo, parametersOf: (name: string) => Record<string, unknown>): Interrupt[] {
  const expiresAt = new Date(pause.deadline_ms).toISOString();
  const stepwise = {
    pause_id: pause.pause_id,
    phase: pause.phase,
    conv_id: pause.conv_id,
    inference_id: pause.inference_id,
    ...(pause.depth === undefined ? {} : { depth: pause.depth, path: pause.path }),
  };
  // A child run's pause interrupts the root thread's run, its message naming the agents down to it.
  const message = pause.path && pause.path.length > 0 ? `${pause.path.map((step) => step.name).join(' > ')}: ${pause.summary}` : pause.summary;
  if (pause.phase === 'after_tools') {
    return [
      {
        id: pause.pause_id,
        reason: AFTER_TOOLS_REASON,
        message,
        expiresAt,
        responseSchema: { type: 'object', properties: { results: { type: 'object', additionalProperties: true } }, additionalProperties: false },
        metadata: { stepwise },
      },
    ];
  }
  return pause.tool_calls.map((call) => {
    const metadata = { stepwise: { ...stepwise, tool_name: call.name, input: call.input, ...(call.breakpoint ? { breakpoint: true } : {}) } };
    // A question is answered, not approved (docs/ag-ui.md, Questions).
    if (call.answer_schema !== undefined) return questionInterrupt(pause, call, { message, expiresAt, metadata });
    return {
      id: `${pause.pause_id}:${call.id}`,
      reason: 'tool_call',
      toolCallId: call.id,
      message,
      expiresAt,
      responseSchema: {
        type: 'object',
        properties: { approved: { type: 'boolean' }, editedArgs: parametersOf(call.name), reason: { type: 'string' } },
        required: ['approved'],
        additionalProperties: false,
      },
      metadata,
    };
  });
}

/** The pause a resume answers: the part of its first entry's id before the first `:` (pause ids have none). */
export const pauseIdOf = (resume: readonly ResumeEntry[]): string | undefined => resume[0]?.interruptId.split(':')[0];

const toolAnswer = z.strictObject({
  approved: z.boolean(),
  editedArgs: z.record(z.string(), z.unknown()).optional(),
  reason: z.string().max(10_000).optional(),
});
const resultsAnswer = z.strictObject({ results: z.record(z.string(), z.unknown()).optional() }).optional();

/** Why a resume is not a decision: `invalid_resume` (docs/ag-ui.md, Resuming), with what is wrong. */
export class InvalidResume extends Error {
  override readonly name = 'InvalidResume';
  readonly code = 'invalid_resume';
}

/**
 * The one decision a resume is (docs/ag-ui.md, Resuming): it must answer every interrupt of the pause
 * and nothing else. At `after_inference`: every call approved and none edited is `continue`; edited
 * ones are `edit`; denied ones (`approved: false`, or status `cancelled`) are `deny` with their
 * reasons. Deny and edit at once are two decisions, which one pause cannot take: refused. At
 * `after_tools`: `results` edits what the model sees, else `continue`. Throws `InvalidResume`.
 */
export function decisionOf(pause: PauseInfo, resume: readonly ResumeEntry[], parametersOf: (name: string) => Record<string, unknown>): ViewDecision {
  const open = new Set(interruptsOf(pause, parametersOf).map((interrupt) => interrupt.id));
  const answered = new Map<string, ResumeEntry>();
  for (const entry of resume) {
    if (!open.has(entry.interruptId)) throw new InvalidResume(`interrupt "${entry.interruptId}" is not open on pause ${pause.pause_id}`);
    if (answered.has(entry.interruptId)) throw new InvalidResume(`interrupt "${entry.interruptId}" is answered twice`);
    answered.set(entry.interruptId, entry);
  }
  const missing = [...open].filter((id) => !answered.has(id));
  if (missing.length > 0) throw new InvalidResume(`the resume leaves interrupts unanswered: ${missing.join(', ')}`);
  return pause.phase === 'after_tools' ? afterToolsDecision(answered.get(pause.pause_id)) : callsDecision(pause, answered);
}

function afterToolsDecision(entry: ResumeEntry | undefined): ViewDecision {
  if (entry?.status !== 'resolved') return { action: 'continue' };
  const parsed = resultsAnswer.safeParse(entry.payload);
  if (!parsed.success) throw new InvalidResume(`the answer to ${entry.interruptId} fails its schema: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`);
  const results = parsed.data?.results;
  return results && Object.keys(results).length > 0 ? { action: 'edit', results } : { action: 'continue' };
}

function callsDecision(pause: PauseInfo, answered: ReadonlyMap<string, ResumeEntry>): ViewDecision {
  const answers = answersOf(pause, answered, isPlainApproval, (message) => {
    throw new InvalidResume(message);
  });
  if (answers) return answers;
  const denied: string[] = [];
  const reasons = new Set<string>();
  const edits: Record<string, unknown> = {};
  for (const call of pause.tool_calls) {
    const entry = answered.get(`${pause.pause_id}:${call.id}`);
    if (!entry || entry.status === 'cancelled') {
      denied.push(call.id);
      reasons.add('cancelled by the user');
      continue;
    }
    const parsed = toolAnswer.safeParse(entry.payload);
    if (!parsed.success) throw new InvalidResume(`the answer to ${entry.interruptId} fails its schema: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'payload'}: ${issue.message}`).join('; ')}`);
    const { approved, editedArgs, reason } = parsed.data;
    if (!approved) {
      denied.push(call.id);
      if (reason?.trim()) reasons.add(reason.trim());
    } else if (editedArgs) edits[call.id] = editedArgs;
  }
  const edited = Object.keys(edits).length > 0;
  if (denied.length > 0 && edited) throw new InvalidResume('a resume that denies some calls and edits others is two decisions; deny or edit, not both');
  if (denied.length > 0) return { action: 'deny', tool_call_ids: denied, ...(reasons.size > 0 ? { reason: [...reasons].join('; ') } : {}) };
  return edited ? { action: 'edit', edits } : { action: 'continue' };
}

/** An entry that approves its call as the model asked it. */
const isPlainApproval = (entry: ResumeEntry | undefined): boolean => {
  const parsed = toolAnswer.safeParse(entry?.payload);
  return entry?.status === 'resolved' && parsed.success && parsed.data.approved && parsed.data.editedArgs === undefined;
};
