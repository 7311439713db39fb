import type { JsonSchema } from '../core/engine.js';
import { defineHumanTool } from './define-human-tool.js';
import { defineTool, isZodType, type Tool, type ToolDefinition } from './define-tool.js';

/** A question in a tools file (docs/protocol.md, Questions for a human): a plain tool with `human: {answer}` and no `execute`. */
export interface HumanToolEntry {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  readonly human: { readonly answer: JsonSchema };
}

const isHumanEntry = (candidate: object): candidate is HumanToolEntry => 'human' in candidate && (candidate as { human?: unknown }).human !== undefined;

/** Accepts a tool made by `defineTool` or `defineHumanTool`, or a plain definition (the tools file format). */
export function toTool(candidate: Tool | ToolDefinition | HumanToolEntry): Tool {
  const isBuilt = typeof (candidate as Tool).validate === 'function' && !isZodType(candidate.parameters);
  if (isBuilt) return candidate as Tool;
  if (isHumanEntry(candidate)) return humanFromFile(candidate);
  return defineTool(candidate as ToolDefinition);
}

function humanFromFile(entry: HumanToolEntry): Tool {
  const { human } = entry;
  if (typeof human !== 'object' || human === null || typeof human.answer !== 'object' || human.answer === null) {
    throw new TypeError(`tool ${String(entry.name)}: "human" must be {answer: <JSON Schema>}`);
  }
  return defineHumanTool({ name: entry.name, description: entry.description, parameters: entry.parameters, answer: human.answer });
}
