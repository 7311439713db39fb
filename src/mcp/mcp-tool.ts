import { defineTool, type Tool } from '../tools/define-tool.js';

/**
 * The two calls stepwise makes on an MCP client: an official SDK `Client` fits. Said structurally so
 * the published types do not pull in the SDK's (which need the DOM's fetch types).
 */
export interface McpClientLike {
  listTools(params?: { cursor?: string }, options?: { timeout?: number }): Promise<{ tools: unknown[]; nextCursor?: string }>;
  callTool(
    params: { name: string; arguments?: Record<string, unknown> },
    resultSchema?: undefined,
    options?: { signal?: AbortSignal; timeout?: number },
  ): Promise<unknown>;
}

/** What `tools/list` says of one tool (the fields stepwise uses). */
export interface McpToolListing {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly annotations?: { readonly readOnlyHint?: boolean; readonly idempotentHint?: boolean };
}

/** What `tools/call` answers (the fields stepwise uses). */
interface McpCallResult {
  readonly content?: readonly { readonly type: string; readonly text?: string }[];
  readonly structuredContent?: unknown;
  readonly isError?: boolean;
}

/** Whether the tool's server is still there: `down()` is why not, once it is gone. */
export interface McpLiveness {
  down(): string | undefined;
}

const ALWAYS_UP: McpLiveness = { down: () => undefined };

/**
 * The executor's per-call timeout and the run's cancel fire the tool's AbortSignal; that is the one
 * clock, so the SDK's own request timeout (60 s by default) is pushed out of the way.
 */
const NO_SDK_TIMEOUT_MS = 2_147_483_647;

/** Every tool of a connected client (all pages of `tools/list`), as ordinary stepwise tools. */
export async function mcpToolsOf(client: McpClientLike, liveness?: McpLiveness): Promise<Tool[]> {
  return (await listMcpTools(client)).map((listing) => toMcpTool(client, listing, liveness));
}

/** `tools/list`, every page. */
export async function listMcpTools(client: McpClientLike, timeout?: number): Promise<McpToolListing[]> {
  const listings: McpToolListing[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, timeout === undefined ? {} : { timeout });
    listings.push(...(page.tools as McpToolListing[]));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return listings;
}

/**
 * One MCP tool as an ordinary stepwise tool: advertised with its input schema, validated against
 * it, and called over the client. Aborting the call (timeout, cancel) makes the SDK send
 * `notifications/cancelled`, so the server stops too. A result with `isError` is a tool failure,
 * handled by the run's error policy like a throw. Reading or idempotent tools (by their annotations)
 * may run again after a restart. Once `liveness` says the server is gone the tool is no longer offered.
 */
export function toMcpTool(client: McpClientLike, listing: McpToolListing, liveness: McpLiveness = ALWAYS_UP): Tool {
  const { annotations } = listing;
  return defineTool({
    name: listing.name,
    description: listing.description ?? listing.title ?? '',
    parameters: listing.inputSchema,
    ...(annotations?.readOnlyHint === true || annotations?.idempotentHint === true ? { idempotent: true } : {}),
    available: () => liveness.down() === undefined,
    execute: async (args, { signal }) => {
      const down = liveness.down();
      if (down !== undefined) throw new Error(down);
      let result: McpCallResult;
      try {
        result = (await client.callTool({ name: listing.name, arguments: args as Record<string, unknown> }, undefined, {
          signal,
          timeout: NO_SDK_TIMEOUT_MS,
        })) as McpCallResult;
      } catch (error) {
        // "Connection closed" says less to the model than which server is gone.
        throw new Error(liveness.down() ?? (error as Error).message, { cause: error });
      }
      if (result.isError) throw new Error(textOf(result) || `${listing.name} failed`);
      return result.structuredContent ?? contentOf(result);
    },
  });
}

const textOf = (result: McpCallResult): string =>
  (result.content ?? []).flatMap((part) => (part.type === 'text' && part.text !== undefined ? [part.text] : [])).join('\n');

/** Text parts as one string (what most tools return); anything else (images, resources) as the parts. */
function contentOf(result: McpCallResult): unknown {
  const content = result.content ?? [];
  return content.every((part) => part.type === 'text') ? textOf(result) : content;
}
