import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
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
 * `fetch`: what the MCP hosts call out with (the process's `OutgoingHttp`).
 * @throws ConfigError when a hosted server needs a provider that cannot call it.
 */
export async function createToolHosts(
  config: PalaverConfig,
  primary: ModelProvider | undefined,
  localTools: readonly LocalTool[],
  logger: Logger,
  hostedOnly = false,
  fetch?: typeof globalThis.fetch,
) {
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
        maxResultChars: server.maxResultChars ?? config.tools.maxResultChars,
        logger,
        ...(fetch ? { fetch } : {}),
        ...(server.bearerToken ? { bearerToken: server.bearerToken } : {}),
        ...(server.headers ? { headers: server.headers } : {}),
        ...(server.userIdArgument ? { userIdArgument: server.userIdArgument } : {}),
        ...(server.toolLabels ? { toolLabels: server.toolLabels } : {}),
        ...(server.approval ? { approval: server.approval } : {}),
      }),
    );
  }
  return { hosts, hostedMcp };
}

/**
 * The tools `agent.toolsModule` exports (`tools` or the default export). `fresh`: read the file again though this
 * process imported it before (`palaver dev` after a change).
 */
export async function loadToolsModule(path: string, options: { readonly fresh?: boolean } = {}): Promise<LocalTool[]> {
  let module: { tools?: unknown; default?: unknown };
  try {
    module = (await importModule(path, options.fresh === true)) as typeof module;
  } catch (error) {
    const message = error instanceof TypeScriptUnsupported ? error.message : `agent.toolsModule ${path} cannot be loaded: ${(error as Error).message}`;
    throw new ConfigError(message, [{ path: 'agent.toolsModule', message: 'cannot be loaded' }], { cause: error });
  }
  const tools = module.tools ?? module.default;
  if (!Array.isArray(tools)) {
    throw new ConfigError(`agent.toolsModule ${path} must export \`tools\`: an array made with defineTool`, [
      { path: 'agent.toolsModule', message: 'no tools export' },
    ]);
  }
  return tools as LocalTool[];
}

const TYPESCRIPT_FILE = /\.[cm]?ts$/;
let freshLoads = 0;

class TypeScriptUnsupported extends Error {}

/**
 * Imports a tools module. A TypeScript one loads where Node strips types itself (22.18+, 24), else through tsx when
 * the project has it installed (found from the module's own folder); otherwise the error says what to do.
 */
async function importModule(path: string, fresh: boolean): Promise<unknown> {
  const url = pathToFileURL(path).href;
  // Node keeps an imported module for the process's life: a new query string makes it read the file again (the
  // files it imports stay as first loaded). tsx's tsImport loads a fresh module graph on every call anyway.
  if (!TYPESCRIPT_FILE.test(path) || (process.features as { typescript?: unknown }).typescript) return import(fresh ? `${url}?fresh=${++freshLoads}` : url);
  let tsxApi: string;
  try {
    // The ESM entry (require.resolve would pick the CommonJS one, whose tsImport cannot load ES modules).
    tsxApi = join(dirname(createRequire(path).resolve('tsx/package.json')), 'dist/esm/api/index.mjs');
  } catch {
    throw new TypeScriptUnsupported(
      `agent.toolsModule ${path} is TypeScript, which Node ${process.versions.node} cannot load by itself: run Palaver on Node 22.18+ or 24 (they strip types), install tsx in your project (npm install --save-dev tsx), or point agent.toolsModule at the compiled .js file.`,
    );
  }
  const { tsImport } = (await import(pathToFileURL(tsxApi).href)) as { tsImport: (specifier: string, parent: string) => Promise<unknown> };
  return tsImport(url, import.meta.url);
}
