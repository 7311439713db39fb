export { parseMcpConfig, type McpConfig, type McpServerSpec, type StdioServerSpec, type HttpServerSpec } from './mcp-config.js';
export { connectMcpServers, type McpServerDown, type McpServers, type McpServersConfig } from './mcp-servers.js';
export { listMcpTools, mcpToolsOf, toMcpTool, type McpClientLike, type McpLiveness, type McpToolListing } from './mcp-tool.js';
