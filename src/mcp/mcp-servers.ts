import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Subject, type Observable } from 'rxjs';
import type { Tool } from '../tools/define-tool.js';
import { isHttpSpec, type McpConfig, type McpServerSpec } from './mcp-config.js';
import { listMcpTools, toMcpTool, type McpToolListing } from './mcp-tool.js';

export interface McpServersConfig {
  /** How long a server gets to start and list its tools. Default 10 000 ms. */
  readonly startTimeoutMs?: number;
  /** Names already taken (the server's own tools): an MCP tool of the same name is skipped. */
  readonly takenNames?: readonly string[];
  /** Told about each server that failed to start or stopped, and each tool that was skipped. Default console.error. */
  readonly report?: (message: string) => void;
  /** Identifies stepwise to the servers. */
  readonly clientInfo?: { readonly name: string; readonly version: string };
}

/** A server that stopped while in use: its tools are withdrawn. */
export interface McpServerDown {
  readonly server: string;
  readonly tools: readonly string[];
  readonly message: string;
}

/** The tools of every MCP server that started, and the way to stop them all. */
export interface McpServers {
  readonly tools: readonly Tool[];
  /** The servers that started, with their tools' names. */
  readonly servers: readonly { readonly name: string; readonly tools: readonly string[] }[];
  /** Each server that stops on its own (crash, closed connection); its tools are no longer offered. */
  readonly down$: Observable<McpServerDown>;
  /** Closes every connection (a stdio server's process ends with it). */
  close(): Promise<void>;
}

const DEFAULT_START_TIMEOUT_MS = 10_000;

/** The parts of the MCP SDK a connection needs. */
interface McpSdk {
  readonly Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client;
  readonly stdio: typeof import('@modelcontextprotocol/sdk/client/stdio.js');
  readonly http: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js');
}

/**
 * Imported when servers are connected, not with the package: the SDK (with ajv and its transports) is
 * the heaviest thing a program that uses no MCP server would otherwise load (docs/library.md,
 * A light import).
 */
async function loadMcpSdk(): Promise<McpSdk> {
  const [client, stdio, http] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  return { Client: client.Client, stdio, http };
}

/**
 * Starts (or connects to) every server of an MCP config at once. A server that fails is reported and
 * skipped (docs/protocol.md, MCP servers file): one broken entry must not keep the service from starting. Name clashes are
 * settled in order: the server's own tools first, then the servers in the file's order; a later tool
 * of a taken name is skipped and reported.
 */
export async function connectMcpServers(config: McpConfig, options: McpServersConfig = {}): Promise<McpServers> {
  const report = options.report ?? ((message: string) => console.error(message));
  const entries = Object.entries(config.mcpServers);
  const sdk = await loadMcpSdk();
  const settled = await Promise.allSettled(entries.map(([, spec]) => connectOne(sdk, spec, options)));
  const down$ = new Subject<McpServerDown>();
  let closing = false;
  const clients: Client[] = [];
  const tools: Tool[] = [];
  const servers: { name: string; tools: string[] }[] = [];
  const taken = new Set(options.takenNames ?? []);
  settled.forEach((outcome, index) => {
    const name = (entries[index] as [string, McpServerSpec])[0];
    if (outcome.status === 'rejected') {
      report(`mcp ${name}: not started: ${messageOf(outcome.reason)}`);
      return;
    }
    const { client, listings } = outcome.value;
    clients.push(client);
    const names: string[] = [];
    let down: string | undefined;
    const liveness = { down: () => down };
    for (const listing of listings) {
      if (taken.has(listing.name)) {
        report(`mcp ${name}: tool ${listing.name} skipped: another tool has that name`);
        continue;
      }
      try {
        tools.push(toMcpTool(client, listing, liveness));
      } catch (error) {
        report(`mcp ${name}: tool ${listing.name} skipped: ${messageOf(error)}`);
        continue;
      }
      taken.add(listing.name);
      names.push(listing.name);
    }
    client.onclose = () => {
      if (closing) return;
      down = `MCP server ${name} stopped: its tools (${names.join(', ')}) are withdrawn`;
      report(`mcp ${name}: stopped; its tools are withdrawn`);
      down$.next({ server: name, tools: names, message: down });
    };
    servers.push({ name, tools: names });
  });
  return {
    tools,
    servers,
    down$: down$.asObservable(),
    close: async () => {
      closing = true;
      await Promise.allSettled(clients.map((client) => client.close()));
      down$.complete();
    },
  };
}

async function connectOne(sdk: McpSdk, spec: McpServerSpec, options: McpServersConfig): Promise<{ client: Client; listings: McpToolListing[] }> {
  const client = new sdk.Client(options.clientInfo ?? { name: 'stepwise', version: '0' });
  const timeout = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  try {
    await client.connect(transportOf(sdk, spec), { timeout });
    return { client, listings: await listMcpTools(client, timeout) };
  } catch (error) {
    await client.close().catch(() => {});
    throw new Error(`${isHttpSpec(spec) ? spec.url : spec.command}: ${messageOf(error)}`, { cause: error });
  }
}

function transportOf(sdk: McpSdk, spec: McpServerSpec): Transport {
  if (isHttpSpec(spec)) {
    const headers = spec.headers;
    return new sdk.http.StreamableHTTPClientTransport(new URL(spec.url), headers ? { requestInit: { headers: { ...headers } } } : {});
  }
  return new sdk.stdio.StdioClientTransport({
    command: spec.command,
    ...(spec.args ? { args: [...spec.args] } : {}),
    // The SDK passes only a safe subset of our environment (PATH, HOME, ...) unless told more.
    env: { ...sdk.stdio.getDefaultEnvironment(), ...spec.env },
    ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
    stderr: 'inherit',
  });
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
