import { pathToFileURL } from 'node:url';
import type { PalaverConfig } from './config/index.js';
import { ConfigError } from './domain/errors.js';
import type { HostedMcpSpec, ModelProvider } from './domain/ports/model-provider.js';
import type { ToolHost } from './domain/ports/tool-host.js';
import type { Logger } from './observability/logger.js';
import type { LocalTool } from './tools/define-tool.js';

// The tool hosts a config describes, built in one place for the two processes that run tools: a Palaver (inline
// dispatch) and a tool worker (`palaver worker`), so both run a tool exactly the same way.

/**
 * The local tools and the MCP servers of `config.mcp.servers`. A `hosted` server is called by the model provider
 * itself, so it becomes a spec for the model, not a host; without a `primary` model (a tool worker) it is left out.
 * `hostedOnly` (a runtime with streams dispatch): only the hosted servers, since the others are the workers'.
 * @throws ConfigError when a hosted server needs a provider that cannot call it.
 */
export async function createToolHosts(config: PalaverConfig, primary: ModelProvider | undefined, localTools: readonly LocalTool[], logger: Logger, hostedOnly = false) {
  const hosts: ToolHost[] = [];
  const hostedMcp: HostedMcpSpec[] = [];
  if (localTools.length > 0) {
    const { LocalToolHost } = await import('./tools/local-tool-host.js');
    hosts.push(new LocalToolHost(localTools));
  }
  for (const server of config.mcp.servers) {
    if (server.mode === 'hosted') {
      if (primary === undefined) continue;
      if (!primary.capabilities.hostedMcp) {
        throw new ConfigError(`MCP server ${server.label} is in hosted mode, which needs model.provider "openai-responses"`, [
          { path: 'mcp.servers.mode', message: 'hosted needs openai-responses' },
        ]);
      }
      const { toHostedMcpSpec } = await import('./tools/mcp/hosted-mcp.js');
      hostedMcp.push(toHostedMcpSpec(server));
      continue;
    }
    if (hostedOnly) continue;
    // The MCP SDK is loaded only by agents that use an MCP server.
    const { McpToolHost } = await import('./tools/mcp/mcp-tool-host.js');
    hosts.push(
      new McpToolHost({
        name: server.label,
        url: server.url,
        timeoutMs: server.timeoutMs,
        maxResultChars: server.maxResultChars,
        logger,
        ...(server.bearerToken ? { bearerToken: server.bearerToken } : {}),
        ...(server.userIdArgument ? { userIdArgument: server.userIdArgument } : {}),
      }),
    );
  }
  return { hosts, hostedMcp };
}

/** The tools `agent.toolsModule` exports (`tools` or the default export). */
export async function loadToolsModule(path: string): Promise<LocalTool[]> {
  let module: { tools?: unknown; default?: unknown };
  try {
    module = (await import(pathToFileURL(path).href)) as typeof module;
  } catch (error) {
    throw new ConfigError(`agent.toolsModule ${path} cannot be loaded: ${(error as Error).message}`, [{ path: 'agent.toolsModule', message: 'cannot be loaded' }], { cause: error });
  }
  const tools = module.tools ?? module.default;
  if (!Array.isArray(tools)) {
    throw new ConfigError(`agent.toolsModule ${path} must export \`tools\`: an array made with defineTool`, [{ path: 'agent.toolsModule', message: 'no tools export' }]);
  }
  return tools as LocalTool[];
}
