import type { HostedMcpSpec } from '../../domain/ports/model-provider.js';
import { withBearer } from './mcp-headers.js';

export interface HostedMcpConfig {
  /** Server label the model provider shows and logs. */
  readonly label: string;
  readonly url: string;
  /** Sent by the provider as `Authorization: Bearer …`. */
  readonly bearerToken?: string;
  /** Further headers the provider sends (`MCP-Protocol-Version`, …); `bearerToken` wins over an `Authorization` here. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Only these tools are offered; all when absent. */
  readonly allowedTools?: readonly string[];
  /** Default `never`: Palaver has no approval step for hosted calls. */
  readonly requireApproval?: 'never' | 'always';
}

/**
 * Describes an MCP server for the Responses API to call itself (`type: "mcp"` tool).
 *
 * The provider calls the server with the model's arguments as written, so Palaver cannot bind the user
 * (`userIdArgument`) or forward correlation ids: use hosted mode only for tools that act for no particular user,
 * or whose server identifies the user some other way.
 *
 * @example
 * toHostedMcpSpec({ label: 'docs', url: 'https://mcp.example.com/mcp', bearerToken, headers: { 'MCP-Protocol-Version': '2025-06-18' } });
 */
export function toHostedMcpSpec(config: HostedMcpConfig): HostedMcpSpec {
  const headers = withBearer(config.headers, config.bearerToken);
  return {
    serverLabel: config.label,
    serverUrl: config.url,
    requireApproval: config.requireApproval ?? 'never',
    ...(headers ? { headers } : {}),
    ...(config.allowedTools ? { allowedTools: [...config.allowedTools] } : {}),
  };
}
