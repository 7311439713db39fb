import type { Engine, JsonSchema } from '../core/engine.js';
import { createScriptedEngine, type Script } from '../engines/scripted.js';
import { defineAgentTool } from './define-agent-tool.js';
import type { Tool } from './define-tool.js';

/** An agent in a tools file (docs/protocol.md, Tools file): a plain object with `agent` and no `execute`. */
export interface AgentToolEntry {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  readonly agent: {
    /** Names of the file's tools or earlier agents; default every tool of the parent run that is not an agent tool. */
    readonly tools?: readonly string[];
    readonly system?: string;
    readonly max_iterations?: number;
    readonly step_mode?: 'inherit' | 'off';
    /** The child's own script for the scripted engine, consumed in order per conversation. Default: the parent's engine. */
    readonly script?: Script;
  };
}

export const isAgentEntry = (candidate: unknown): candidate is AgentToolEntry =>
  typeof candidate === 'object' && candidate !== null && 'agent' in candidate && typeof (candidate as { execute?: unknown }).execute !== 'function';

const KNOWN = new Set(['tools', 'system', 'max_iterations', 'step_mode', 'script']);

/**
 * A tools file's agent as an agent tool, its `tools` named among `others` (the file's tools and the agents before it).
 * Fails naming the agent and the field, so a bad tools file stops the CLI at start.
 */
export function agentFromFile(entry: AgentToolEntry, others: readonly Tool[]): Tool {
  const { agent, name } = entry;
  const fail = (message: string): never => {
    throw new TypeError(`tool ${String(name)}: agent.${message}`);
  };
  if (typeof agent !== 'object' || agent === null) throw new TypeError(`tool ${String(name)}: "agent" must be an object`);
  for (const field of Object.keys(agent)) if (!KNOWN.has(field)) fail(`${field} is not a field of an agent (${[...KNOWN].join(', ')})`);
  if (agent.tools !== undefined && !Array.isArray(agent.tools)) fail('tools must be an array of tool names');
  const tools = agent.tools?.map((tool) => others.find((candidate) => candidate.name === tool) ?? fail(`tools names "${tool}", not a tool or an earlier agent of this file`));
  if (agent.max_iterations !== undefined && !(Number.isInteger(agent.max_iterations) && agent.max_iterations >= 1)) fail('max_iterations must be an integer >= 1');
  if (agent.system !== undefined && typeof agent.system !== 'string') fail('system must be a string');
  let engine: Engine | undefined;
  try {
    engine = agent.script === undefined ? undefined : createScriptedEngine(agent.script);
  } catch (error) {
    fail(`script: ${(error as Error).message}`);
  }
  return defineAgentTool({
    name,
    description: entry.description,
    parameters: entry.parameters,
    agent: {
      ...(engine ? { engine } : {}),
      ...(tools ? { tools } : {}),
      ...(agent.system === undefined ? {} : { system: agent.system }),
      ...(agent.max_iterations === undefined ? {} : { maxIterations: agent.max_iterations }),
      ...(agent.step_mode === undefined ? {} : { stepMode: agent.step_mode }),
    },
  });
}
