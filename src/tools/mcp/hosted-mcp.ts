import type { HostedMcpSpec } from '../../domain/ports/model-provider.js';

export interface HostedMcpConfig {
  /** Server label the model provider shows and logs. */
  readonly label: string;
  readonly url: string;
  /** Sent by the provider as `Authorization: Bearer …`. */
  readonly bearerToken?: string;
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
 * toHostedMcpSpec({ label: 'docs', url: 'https://mcp.example.com/mcp', bearerToken, allowedTools: ['search'] });
 */
export function toHostedMcpSpec(config: HostedMcpConfig): HostedMcpSpec {
  return {
    serverLabel: config.label,
    serverUrl: config.url,
    requireApproval: config.requireApproval ?? 'never',
    ...(config.bearerToken ? { headers: { Authorization: `Bearer ${config.bearerToken}` } } : {}),
    ...(config.allowedTools ? { allowedTools: [...config.allowedTools] } : {}),
  };
}
