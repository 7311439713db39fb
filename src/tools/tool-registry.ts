import type { ToolSpec } from '../core/engine.js';
import type { Tool, ToolDefinition } from './define-tool.js';
import { toTool } from './to-tool.js';

/** The tools a runtime knows, by name. Allow-lists select from it per run. */
export interface ToolRegistry {
  get(name: string): Tool | undefined;
  names(): string[];
  /** Specs to advertise: all available tools, or only the allowed ones (unknown names are skipped). Read-only. */
  specs(allowed?: ReadonlySet<string>): readonly ToolSpec[];
  /** Names in `names` that the registry does not know. */
  unknown(names: readonly string[]): string[];
}

export function createToolRegistry(tools: readonly (Tool | ToolDefinition)[] = []): ToolRegistry {
  const byName = new Map<string, Tool>();
  for (const candidate of tools) {
    const tool = toTool(candidate);
    if (byName.has(tool.name)) throw new TypeError(`createToolRegistry: two tools are named "${tool.name}"`);
    byName.set(tool.name, tool);
  }
  const specOf = ({ name, description, parameters }: Tool): ToolSpec => Object.freeze({ name, description, parameters });
  const all = [...byName.values()];
  // Every tool, advertised as one frozen list shared by every request while no tool can come and go
  // (MCP tools can): built per inference, the list and its specs would cost heap at every step.
  const fixed = all.some((tool) => tool.available !== undefined) ? undefined : Object.freeze(all.map(specOf));
  return {
    get: (name) => byName.get(name),
    names: () => [...byName.keys()],
    specs: (allowed) =>
      !allowed && fixed ? fixed : all.filter((tool) => (!allowed || allowed.has(tool.name)) && tool.available?.() !== false).map(specOf),
    unknown: (names) => names.filter((name) => !byName.has(name)),
  };
}
