import type { Router } from 'express';
import { loadExpress } from './server-deps.js';
import type { ServerContext } from './context.js';

/** Where a tool comes from: `built-in` (the server's own or the library's), `tools-file`, `mcp:<server>`. */
export type ToolSource = string;

/**
 * `GET /tools`: `{tools: [{name, description, parameters, source}]}`, every tool the server offers now,
 * in registration order. A tool that cannot be called (its MCP server died) is not listed, as it is no
 * longer advertised to the model. `sources` names each tool's origin; unnamed tools are `built-in`.
 */
export function toolRoutes(context: ServerContext, sources: ReadonlyMap<string, ToolSource>): Router {
  const router = loadExpress().Router();
  router.get('/tools', (_req, res) => {
    const tools = context.stepwise.registry.specs().map(({ name, description, parameters }) => ({ name, description, parameters, source: sources.get(name) ?? 'built-in' }));
    res.json({ tools });
  });
  return router;
}
