import { type ObservableInput } from 'rxjs';
import { z } from 'zod';
import type { Engine, JsonSchema, ToolSpec } from '../core/engine.js';

/** What a tool's failure does to the run. */
export type ToolErrorPolicy = 'continue' | 'retry' | 'abort';

export interface ToolContext {
  /** Fires on the per-call timeout and when the run is cancelled. */
  readonly signal: AbortSignal;
  readonly tool_call_id: string;
}

/** What a breakpoint predicate knows of the call besides its arguments. */
export interface BreakpointContext {
  readonly tool_call_id: string;
  readonly conv_id: string;
  readonly session_id: string;
  readonly inference_id: string;
}

/** A tool's own breakpoint: `true` pauses before every call, a predicate before the calls it picks. */
export type Breakpoint<Args = unknown> = boolean | ((args: Args, context: BreakpointContext) => boolean);

export interface ToolDefinition<Args = unknown, Result = unknown> {
  readonly name: string;
  readonly description: string;
  /** A zod schema, or a JSON Schema object (validated through zod's own conversion). */
  readonly parameters: z.ZodType<Args> | JsonSchema;
  /** May return a value, a Promise, or an Observable (the last runs in virtual time in marble tests). */
  execute(args: Args, context: ToolContext): Result | PromiseLike<Result> | ObservableInput<Result>;
  /** Overrides the executor's policy for this tool. */
  readonly policy?: ToolErrorPolicy;
  /** Overrides the executor's per-call timeout for this tool, in ms. */
  readonly timeoutMs?: number;
  /**
   * Safe to run twice with the same arguments. A call that was running when the server stopped is run
   * again after a restart only when this is true; otherwise it gets an "interrupted" error (docs/protocol.md, Durability).
   * Default false.
   */
  readonly idempotent?: boolean;
  /**
   * False while the tool cannot be called (its MCP server died): it is not offered to the model, and a
   * call the model still makes fails with the tool's own message. Default: always available.
   */
  available?(): boolean;
  /**
   * Asks for an `after_inference` pause before this tool runs, even with step mode off (docs/protocol.md, Breakpoints
   * and result edits); the call is marked `breakpoint: true` in the pause. The predicate sees the model's arguments
   * as given (not yet validated); one that throws pauses (the safe side). Default false.
   */
  readonly breakpoint?: Breakpoint<Args>;
  /**
   * `false`: no grant ever covers this tool (docs/protocol.md, Grants): every call asks, and a `remember` naming it is
   * refused. Default true.
   */
  readonly grantable?: boolean;
}

export type Validation<Args = unknown> = { readonly ok: true; readonly value: Args } | { readonly ok: false; readonly issues: readonly string[] };

/**
 * A tool ready for the registry: its provider-facing spec and a validator. `Args` (what `validate`
 * yields) lets typed helpers such as `editCall` check arguments per tool at compile time.
 */
export interface Tool<Args = unknown> extends ToolSpec {
  readonly policy?: ToolErrorPolicy;
  readonly timeoutMs?: number;
  readonly idempotent?: boolean;
  available?(): boolean;
  /** Set only when the tool asks for pauses itself (see `ToolDefinition.breakpoint`). */
  readonly breakpoint?: true | ((args: unknown, context: BreakpointContext) => boolean);
  /** Set only when no grant may cover the tool (see `ToolDefinition.grantable`). */
  readonly grantable?: false;
  /** Set only on a question for a human (see `defineHumanTool`): what an answer must be. */
  readonly human?: HumanAnswer;
  /** Set only on an agent tool (see `defineAgentTool`): what its child run is. */
  readonly agent?: AgentSpec;
  validate(args: unknown): Validation<Args>;
  execute(args: unknown, context: ToolContext): unknown;
}

/**
 * An agent tool's child run (docs/protocol.md, Agents inside agents): a run of its own tool loop inside its
 * parent's tools phase, in the same conversation and stream.
 */
export interface AgentSpec {
  /** The child's engine; default the parent run's. */
  readonly engine?: Engine;
  /** The child's tools; default every tool of the parent run's that is not an agent tool. */
  readonly tools?: readonly Tool[];
  /** The child's system prompt. */
  readonly system?: string;
  /** The child's iteration limit; default the loop's. */
  readonly maxIterations?: number;
  /** `inherit` (default): the session's step mode and filters apply to the child; `off`: only breakpoints and questions pause it. */
  readonly stepMode: 'inherit' | 'off';
  /** The child's prompt from the call's validated arguments. */
  prompt(args: unknown): string;
}

/** A question's answer: its JSON Schema (shown at the pause as `answer_schema`) and its check. */
export interface HumanAnswer {
  readonly answer_schema: JsonSchema;
  validateAnswer(answer: unknown): Validation;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export const isZodType = (value: unknown): value is z.ZodType =>
  typeof value === 'object' && value !== null && typeof (value as { safeParse?: unknown }).safeParse === 'function';

/** Turns zod issues into lines a model can act on: `path: message`. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`);
}

function toJsonSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema) as JsonSchema;
  return rest;
}

/** A schema given as zod or as JSON Schema: the validator that checks values and the JSON Schema shown to others. */
export interface CheckedSchema {
  readonly validator: z.ZodType;
  readonly jsonSchema: JsonSchema;
}

/** Converts either way once (throws on an unusable schema): zod's own conversion in both directions. */
export function checkedSchema(schema: z.ZodType | JsonSchema): CheckedSchema {
  return isZodType(schema)
    ? { validator: schema, jsonSchema: toJsonSchema(schema) }
    : { validator: z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]), jsonSchema: schema };
}

/** A value checked by a validator, with issues a model (or an operator) can act on. */
export function validateWith<T>(validator: z.ZodType, value: unknown): Validation<T> {
  const parsed = validator.safeParse(value);
  return parsed.success ? { ok: true, value: parsed.data as T } : { ok: false, issues: describeIssues(parsed.error.issues) };
}

/**
 * Defines a tool from zod parameters (or a JSON Schema). Fails at definition time, naming the
 * tool, when the name or schema is unusable, so a bad tools file fails at start and not mid-run.
 */
export function defineTool<Args, Result>(definition: ToolDefinition<Args, Result>): Tool<Args> {
  const { name, description, parameters } = definition;
  if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
    throw new TypeError(`defineTool: name must match ${TOOL_NAME} (got ${JSON.stringify(name)})`);
  }
  if (typeof definition.execute !== 'function') throw new TypeError(`defineTool(${name}): execute must be a function`);
  if (typeof parameters !== 'object' || parameters === null) {
    throw new TypeError(`defineTool(${name}): parameters must be a zod schema or a JSON Schema object`);
  }
  const { breakpoint } = definition;
  if (breakpoint !== undefined && typeof breakpoint !== 'boolean' && typeof breakpoint !== 'function') {
    throw new TypeError(`defineTool(${name}): breakpoint must be a boolean or a function (args, context) => boolean`);
  }
  let checked: CheckedSchema;
  try {
    checked = checkedSchema(parameters);
  } catch (error) {
    throw new TypeError(`defineTool(${name}): unusable parameters schema: ${(error as Error).message}`);
  }
  const { validator, jsonSchema } = checked;
  return {
    name,
    description: description ?? '',
    parameters: jsonSchema,
    ...(definition.policy === undefined ? {} : { policy: definition.policy }),
    ...(definition.timeoutMs === undefined ? {} : { timeoutMs: definition.timeoutMs }),
    ...(definition.idempotent === true ? { idempotent: true } : {}),
    ...(definition.grantable === false ? { grantable: false as const } : {}),
    ...(definition.available === undefined ? {} : { available: definition.available }),
    ...(breakpoint === true ? { breakpoint: true as const } : {}),
    ...(typeof breakpoint === 'function' ? { breakpoint: (args: unknown, context: BreakpointContext) => breakpoint(args as Args, context) } : {}),
    validate: (args) => validateWith<Args>(validator, args),
    execute: (args, context) => definition.execute(args as Args, context),
  };
}
