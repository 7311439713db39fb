import { z } from 'zod';
import type { PauseDecision, PauseInfo } from '../core/pauses.js';
import { isJson, StepCommandError, type ContinueCommand } from './step-commands.js';

/** Checks one answer to a question of `pause`: a list of issues, empty when valid. */
export type AnswerValidator = (toolCallId: string, answer: unknown, pause: PauseInfo) => readonly string[];

/**
 * `action: "answer"` at a pause with questions (docs/protocol.md, Questions for a human): every question of the
 * pause answered, each answer a JSON value its schema accepts; the pause's other calls run as with `continue`.
 * Pure, like `decide`: a refused answer changes nothing and the pause keeps waiting.
 */
export function decideAnswers(pause: PauseInfo, command: ContinueCommand, validateAnswer: AnswerValidator): PauseDecision | StepCommandError {
  const questions = pause.tool_calls.filter((call) => call.answer_schema !== undefined).map((call) => call.id);
  if (pause.phase !== 'after_inference' || questions.length === 0) {
    return new StepCommandError('invalid_action', `"answer" is only valid at a pause with a question (kind "question"); pause ${pause.pause_id} has none`);
  }
  const answers = command.answers ?? {};
  const ids = Object.keys(answers);
  const strangers = ids.filter((id) => !questions.includes(id));
  if (strangers.length > 0) {
    return new StepCommandError('invalid_action', `not a question of this pause: ${strangers.join(', ')}`, { tool_call_ids: strangers });
  }
  const issues: Record<string, readonly string[]> = {};
  for (const id of questions) {
    if (!Object.hasOwn(answers, id)) issues[id] = ['(root): an answer is required'];
    else if (!isJson(answers[id])) issues[id] = ['(root): an answer must be a JSON value'];
    else {
      const found = validateAnswer(id, answers[id], pause);
      if (found.length > 0) issues[id] = found;
    }
  }
  if (Object.keys(issues).length > 0) {
    return new StepCommandError('invalid_arguments', 'answers do not match the questions\' answer schemas', { answers: issues });
  }
  return { action: 'answer', answers };
}

/**
 * A validator from the schemas the pause itself carries, through zod's JSON Schema conversion as for a tools file's
 * parameters: what checks answers when no tool registry gave a validator (a controller used on its own).
 */
export function schemaAnswerValidator(pause: PauseInfo): AnswerValidator {
  return (toolCallId, answer) => {
    const schema = pause.tool_calls.find((call) => call.id === toolCallId)?.answer_schema;
    if (schema === undefined) return [`no question with tool_call_id "${toolCallId}"`];
    const parsed = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]).safeParse(answer);
    return parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`);
  };
}
