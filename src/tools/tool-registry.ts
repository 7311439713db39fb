import type { ToolSpec } from '../core/engine.js';
import { toTool, type Tool, type ToolDefinition } from './define-tool.js';

/** The tools a runtime knows, by name. Allow-lists select from it per run. */
export interface ToolRegistry {
  get(name: string): Tool | undefined;
  names(): string[];
  /** Specs to advertise: all available tools, or only the allowed ones (unknown names are skipped). */
  specs(allowed?: ReadonlySet<string>): ToolSpec[];
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
  return {
    get: (name) => byName.get(name),
    names: () => [...byName.keys()],
    specs: (allowed) =>
      [...byName.values()]
        .filter((tool) => (!allowed || allowed.has(tool.name)) && tool.available?.() !== false)
        .map(({ name, description, parameters }) => ({ name, description, parameters })),
    unknown: (names) => names.filter((name) => !byName.has(name)),
  };
}
