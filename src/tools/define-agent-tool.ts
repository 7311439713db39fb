import type { z } from 'zod';
import type { Engine, JsonSchema } from '../core/engine.js';
import { defineTool, type AgentSpec, type Breakpoint, type Tool } from './define-tool.js';

/** A tool whose work is another agent's run (docs/protocol.md, Agents inside agents). */
export interface AgentToolDefinition<Args = unknown> {
  readonly name: string;
  /** Tells the parent's model when to hand work to this agent. */
  readonly description: string;
  /** What the parent's model sends; a zod schema or a JSON Schema object. */
  readonly parameters: z.ZodType<Args> | JsonSchema;
  readonly agent: {
    readonly engine?: Engine;
    /** Default: every tool of the parent run that is not an agent tool. */
    readonly tools?: readonly Tool[];
    readonly system?: string;
    readonly maxIterations?: number;
    /** Default `inherit`. */
    readonly stepMode?: 'inherit' | 'off';
  };
  /** The child's prompt; default `args.prompt` when it is a string, else the arguments as JSON. */
  readonly prompt?: (args: Args) => string;
  readonly idempotent?: boolean;
  readonly breakpoint?: Breakpoint<Args>;
  readonly grantable?: boolean;
}

/** The child's prompt when the definition gives no `prompt`. */
export function defaultPrompt(args: unknown): string {
  const prompt = (args as { prompt?: unknown } | null)?.prompt;
  return typeof prompt === 'string' ? prompt : JSON.stringify(args);
}

/**
 * Defines an agent tool: an ordinary tool everywhere (advertised, allow-listed, validated, paused on, granted,
 * digested) whose call is a child run of the loop, in its parent's tools phase. The call's result is the child's
 * final text; a child that fails, is cancelled or reaches its iteration limit gives the call an error saying so.
 * The child's pauses are pauses of the conversation, with their `depth` and `path`.
 *
 * @example
 * defineAgentTool({
 *   name: 'research',
 *   description: 'Hand a question to the research agent',
 *   parameters: z.object({ prompt: z.string() }),
 *   agent: { tools: [search], system: 'You research.' },
 * })
 */
export function defineAgentTool<Args>(definition: AgentToolDefinition<Args>): Tool<Args> {
  const { agent, prompt, name } = definition;
  if (typeof agent !== 'object' || agent === null) throw new TypeError(`defineAgentTool(${String(name)}): agent must be an object`);
  const stepMode = agent.stepMode ?? 'inherit';
  if (stepMode !== 'inherit' && stepMode !== 'off') throw new TypeError(`defineAgentTool(${String(name)}): agent.stepMode must be "inherit" or "off"`);
  const tool = defineTool<Args, never>({
    ...definition,
    execute: () => {
      // The loop runs an agent call as a child run: its tools phase never calls this.
      throw new Error(`agent tool "${name}" runs only inside a tool loop`);
    },
  });
  const spec: AgentSpec = {
    ...(agent.engine === undefined ? {} : { engine: agent.engine }),
    ...(agent.tools === undefined ? {} : { tools: agent.tools }),
    ...(agent.system === undefined ? {} : { system: agent.system }),
    ...(agent.maxIterations === undefined ? {} : { maxIterations: agent.maxIterations }),
    stepMode,
    prompt: (args) => (prompt ? prompt(args as Args) : defaultPrompt(args)),
  };
  return { ...tool, agent: spec };
}
