import type { z } from 'zod';
import type { JsonSchema } from '../core/engine.js';
import { checkedSchema, defineTool, validateWith, type CheckedSchema, type Tool } from './define-tool.js';

/** A question the model may ask a human (docs/protocol.md, Questions for a human). */
export interface HumanToolDefinition<Args = unknown, Answer = unknown> {
  readonly name: string;
  /** Tells the model when to ask, as any tool's description does. */
  readonly description: string;
  /** What the model sends: the question and its context. A zod schema or a JSON Schema object. */
  readonly parameters: z.ZodType<Args> | JsonSchema;
  /** What a human answers: a zod schema or a JSON Schema object. The pause shows it as `answer_schema`. */
  readonly answer: z.ZodType<Answer> | JsonSchema;
}

/** Why a question's call has no answer: its pause was continued, edited or timed out instead of answered. */
export const UNANSWERED = 'no answer from a human: the question was not answered (its pause was continued or timed out)';

/**
 * Defines a tool the model calls to ask a human something. Every call pauses at `after_inference`, with step mode
 * on or off (it is a breakpoint that always asks, and no grant covers it); the pause has `kind: "question"` and the
 * answer's JSON Schema; `action: "answer"` with a value the schema accepts resumes it (`answered`) and that value is
 * the call's result, what the model sees. A question whose pause ends otherwise gets the error `UNANSWERED`.
 *
 * @example
 * defineHumanTool({
 *   name: 'ask_budget',
 *   description: 'Ask the user for the trip budget',
 *   parameters: z.object({ question: z.string() }),
 *   answer: z.object({ amount: z.number().positive(), currency: z.enum(['EUR', 'USD']) }),
 * })
 */
export function defineHumanTool<Args, Answer>(definition: HumanToolDefinition<Args, Answer>): Tool<Args> {
  const { name, description, parameters, answer } = definition;
  if (typeof answer !== 'object' || answer === null) {
    throw new TypeError(`defineHumanTool(${String(name)}): answer must be a zod schema or a JSON Schema object`);
  }
  let checked: CheckedSchema;
  try {
    checked = checkedSchema(answer);
  } catch (error) {
    throw new TypeError(`defineHumanTool(${String(name)}): unusable answer schema: ${(error as Error).message}`);
  }
  const tool = defineTool<Args, never>({
    name,
    description,
    parameters,
    breakpoint: true,
    grantable: false,
    // Never retried: only a human can give what is missing.
    policy: 'continue',
    execute: () => {
      throw new Error(UNANSWERED);
    },
  });
  const { validator, jsonSchema } = checked;
  return { ...tool, human: { answer_schema: jsonSchema, validateAnswer: (value) => validateWith<Answer>(validator, value) } };
}
