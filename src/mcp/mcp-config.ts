import { z } from 'zod';

/** A server started as a child process, spoken to over stdio. */
export interface StdioServerSpec {
  readonly command: string;
  readonly args?: readonly string[];
  /** Added to the child's environment (which otherwise inherits only the SDK's safe defaults). */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

/** A server already running, spoken to over streamable HTTP. */
export interface HttpServerSpec {
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export type McpServerSpec = StdioServerSpec | HttpServerSpec;

/** The common MCP config format (Claude Desktop, Cursor, ...): `{"mcpServers": {name: spec}}`. */
export interface McpConfig {
  readonly mcpServers: Readonly<Record<string, McpServerSpec>>;
}

const stdioSpec = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
  })
  .strict();

const httpSpec = z
  .object({
    url: z.url({ protocol: /^https?$/ }),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .strict();

const configSchema = z.object({
  mcpServers: z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a server name is 1-64 letters, digits, _ . or -'), z.union([stdioSpec, httpSpec])),
});

export const isHttpSpec = (spec: McpServerSpec): spec is HttpServerSpec => 'url' in spec;

/** Checks a parsed MCP config file; the error names the field (`mcpServers.files.command: ...`). */
export function parseMcpConfig(value: unknown): McpConfig {
  const parsed = configSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const [issue] = parsed.error.issues;
  const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  const what = issue?.code === 'invalid_union' ? 'expected {command, args?, env?, cwd?} or {url, headers?}' : issue?.message;
  throw new Error(`${where}${what ?? 'invalid MCP config'}`);
}
