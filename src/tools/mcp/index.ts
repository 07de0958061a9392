export { McpToolHost, withoutProperty, type McpToolHostOptions } from './mcp-tool-host.js';
export { toHostedMcpSpec, type HostedMcpConfig } from './hosted-mcp.js';
export { mapCallResult, errorResult, type McpCallResultLike, type McpContentLike } from './map-call-result.js';
export { classifyMcpError, type McpFailure } from './classify-mcp-error.js';
