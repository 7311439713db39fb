import { readFile } from 'node:fs/promises';
import { connectMcpServers, parseMcpConfig, type McpServers } from '../mcp/index.js';
import type { Tool } from '../tools/define-tool.js';
import { packageVersion } from './package-info.js';

/**
 * `--mcp FILE`: a file that cannot be read or is not the common format stops the start (exit 1 naming
 * the file and field); a server that fails to start is only reported, and the others serve.
 */
export async function startMcpServers(file: string, serverTools: readonly Tool[]): Promise<McpServers> {
  let config;
  try {
    config = parseMcpConfig(JSON.parse(await readFile(file, 'utf8')) as unknown);
  } catch (error) {
    throw new Error(`--mcp ${file}: ${(error as Error).message}`);
  }
  const servers = await connectMcpServers(config, {
    takenNames: serverTools.map((tool) => tool.name),
    clientInfo: { name: 'stepwise', version: packageVersion() },
    report: (message) => console.error(`stepwise: ${message}`),
  });
  const started = servers.servers.map(({ name, tools }) => `${name} (${tools.join(', ') || 'no tools'})`);
  console.log(`mcp: ${started.join('; ') || 'no server started'} from ${file}`);
  return servers;
}
