export { parseMcpConfig, type McpConfig, type McpServerSpec, type StdioServerSpec, type HttpServerSpec } from './mcp-config.js';
export { connectMcpServers, type McpServers, type McpServersConfig } from './mcp-servers.js';
export { toMcpTool, type McpToolListing } from './mcp-tool.js';
