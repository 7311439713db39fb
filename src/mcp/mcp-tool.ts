import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { defineTool, type Tool } from '../tools/define-tool.js';

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

/**
 * The executor's per-call timeout and the run's cancel fire the tool's AbortSignal; that is the one
 * clock, so the SDK's own request timeout (60 s by default) is pushed out of the way.
 */
const NO_SDK_TIMEOUT_MS = 2_147_483_647;

/**
 * One MCP tool as an ordinary stepwise tool: advertised with its input schema, validated against
 * it, and called over the client. Aborting the call (timeout, cancel) makes the SDK send
 * `notifications/cancelled`, so the server stops too. A result with `isError` is a tool failure,
 * handled by the run's error policy like a throw. Reading or idempotent tools (by their annotations)
 * may run again after a restart.
 */
export function toMcpTool(client: Client, listing: McpToolListing): Tool {
  const { annotations } = listing;
  return defineTool({
    name: listing.name,
    description: listing.description ?? listing.title ?? '',
    parameters: listing.inputSchema,
    ...(annotations?.readOnlyHint === true || annotations?.idempotentHint === true ? { idempotent: true } : {}),
    execute: async (args, { signal }) => {
      const result = (await client.callTool({ name: listing.name, arguments: args as Record<string, unknown> }, undefined, {
        signal,
        timeout: NO_SDK_TIMEOUT_MS,
      })) as McpCallResult;
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
