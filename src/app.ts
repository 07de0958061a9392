import { pathToFileURL } from 'node:url';
import pLimit from 'p-limit';
import { parseConfig, resolveConfigPaths, type PalaverConfig, type PalaverConfigInput } from './config/index.js';
import { ConfigError } from './domain/errors.js';
import type { ConversationHandler, TurnEvent, TurnOutcome } from './domain/ports/channel.js';
import type { HostedMcpSpec, ModelProvider } from './domain/ports/model-provider.js';
import type { Store } from './domain/ports/store.js';
import type { ToolHost } from './domain/ports/tool-host.js';
import { createModelSet } from './models/index.js';
import { createLogger, type Logger } from './observability/logger.js';
import { PalaverMetrics } from './observability/metrics.js';
import { loadInstructionLibrary } from './runtime/context/instructions.js';
import { ConversationCache } from './runtime/conversation-cache.js';
import { PalaverRuntime } from './runtime/palaver-runtime.js';
import { apiKeyAuth, createHttpApp, startHttpServer, type RunningHttpServer } from './server/index.js';
import { openStore } from './store/index.js';
import type { LocalTool } from './tools/define-tool.js';
import { LocalToolHost } from './tools/local-tool-host.js';
import { toHostedMcpSpec } from './tools/mcp/hosted-mcp.js';
import { ToolRegistry } from './tools/tool-registry.js';

/** What the embedding code adds to the config. */
export interface PalaverOptions {
  /** Local tools (made with `defineTool`); added to those of `agent.toolsModule`. */
  readonly tools?: readonly LocalTool[];
  /** Further tool hosts, e.g. a custom MCP host. */
  readonly toolHosts?: readonly ToolHost[];
  /** Defaults to a pino logger at `config.log.level` on stdout. */
  readonly logger?: Logger;
  /** Folder that relative paths in the config are resolved against (default: the working folder). */
  readonly cwd?: string;
  /** Clock for the runtime facts; tests pass a fixed one. */
  readonly now?: () => Date;
  /** Collect Node's default process metrics too (on for the server, off for embedding). */
  readonly processMetrics?: boolean;
}

/** A reply from `Palaver.chat`. */
export interface ChatReply {
  readonly text: string;
  readonly status: TurnOutcome['status'];
  readonly sessionId: string;
  readonly correlationId: string;
  readonly usage: TurnOutcome['usage'];
}

/** A running Palaver: one store, one model set, one tool registry, one inbound pipeline. */
export interface Palaver {
  readonly config: PalaverConfig;
  /** The inbound pipeline every channel uses. */
  readonly runtime: ConversationHandler;
  readonly store: Store;
  readonly metrics: PalaverMetrics;
  readonly logger: Logger;
  readonly tools: ToolRegistry;
  /**
   * Runs a full turn for `userId` (channel `api`; the conversation defaults to the user id) and resolves with
   * the reply — the same pipeline and persistence as every channel.
   */
  chat(input: { userId: string; text: string; conversationId?: string; onEvent?: (event: TurnEvent) => void }): Promise<ChatReply>;
  /** Checks the database; backs `/health`. */
  health(): Promise<Record<string, { ok: boolean; detail?: string }>>;
  /**
   * Configuration problems worth a warning: allowlisted tools no host provides, roles without an instructions
   * file, tool hosts that cannot list their tools. Used at start-up and by `palaver doctor`.
   */
  diagnose(): Promise<string[]>;
  /**
   * Serves the web chat, AG-UI, `/health` and `/metrics` over HTTP (host and port default to `config.server`).
   * Closing the returned server does not close the Palaver.
   */
  serve(options?: { host?: string; port?: number }): Promise<RunningHttpServer>;
  /** Waits for running turns, then releases the database and tool connections. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Creates a Palaver from a config object (validated here; see `palaver.config.json` in the README).
 * Opens the database and runs its migrations.
 * @throws ConfigError naming the invalid field.
 * @example
 * const palaver = await createPalaver({ model: { name: 'gpt-4.1-mini', apiKey } }, { tools: [myTool] });
 * const reply = await palaver.chat({ userId: 'alice', text: 'Hello' });
 * await palaver.close();
 */
export async function createPalaver(input: PalaverConfigInput | PalaverConfig, options: PalaverOptions = {}): Promise<Palaver> {
  const config = resolveConfigPaths(parseConfig(input), options.cwd ?? process.cwd());
  const logger = options.logger ?? createLogger({ level: config.log.level });
  const metrics = new PalaverMetrics({ defaultMetrics: options.processMetrics ?? false });
  const instructions = loadInstructionLibrary(config.agent.instructionsDir);
  const models = createModelSet(config.model);
  const moduleTools = config.agent.toolsModule ? await loadToolsModule(config.agent.toolsModule) : [];
  const { hosts, hostedMcp } = await createToolHosts(config, models.primary, [...moduleTools, ...(options.tools ?? [])], logger);
  const tools = new ToolRegistry([...hosts, ...(options.toolHosts ?? [])], { roles: config.roles.definitions, withoutRole: config.roles.withoutRole });
  const store = await openStore(config.database.url);

  const runtime = new PalaverRuntime(
    {
      store,
      models,
      tools,
      hostedMcp,
      instructions,
      agent: {
        defaultRole: config.agent.defaultRole,
        historyLimit: config.agent.historyLimit,
        maxToolRounds: config.agent.maxToolRounds,
        maxToolCallsPerTurn: config.agent.maxToolCallsPerTurn,
        maxCallsPerTool: config.agent.maxCallsPerTool,
        defaultTimeZone: config.agent.timezone,
        defaultLanguage: config.agent.language,
        roleNames: Object.keys(config.roles.definitions),
        setRoleTool: config.roles.setRoleTool,
        roleArgument: config.roles.roleArgument,
      },
      prices: config.model.prices,
      currency: config.model.currency,
      limitModelCalls: pLimit(config.limits.maxConcurrentModelCalls),
      cache: new ConversationCache({ maxEntries: Math.max(1, config.cache.maxEntries), ttlMs: config.cache.ttlMs, historyLimit: config.agent.historyLimit }),
      logger,
      metrics,
      now: options.now ?? (() => new Date()),
    },
    { maxInboundChars: config.limits.maxInboundChars },
  );

  let closing: Promise<void> | undefined;
  async function checkHealth(): Promise<Record<string, { ok: boolean; detail?: string }>> {
    const checks: Record<string, { ok: boolean; detail?: string }> = {};
    try {
      await store.ping();
      checks.database = { ok: true };
    } catch (error) {
      checks.database = { ok: false, detail: error instanceof Error ? error.message : String(error) };
    }
    return checks;
  }

  return {
    config,
    runtime,
    store,
    metrics,
    logger,
    tools,
    async chat({ userId, text, conversationId, onEvent }) {
      const outcome = await runtime.handle({ channel: 'api', accountId: userId, conversationId: conversationId ?? userId, text }, onEvent ? { onEvent } : {});
      return { text: outcome.reply, status: outcome.status, sessionId: outcome.sessionId, correlationId: outcome.correlationId, usage: outcome.usage };
    },
    async diagnose() {
      const missingFiles = Object.keys(config.roles.definitions)
        .filter((role) => !instructions.roles.has(role))
        .map((role) => `role ${role} has no instructions file ${role}.md in ${config.agent.instructionsDir}`);
      return [...missingFiles, ...(await tools.diagnose())];
    },
    serve(serveOptions = {}) {
      const app = createHttpApp({
        handler: runtime,
        health: checkHealth,
        apiKey: config.server.apiKey,
        showToolDetails: config.server.showToolDetails,
        maxInboundChars: config.limits.maxInboundChars,
        logger,
        extraRoutes: (http) => {
          http.use('/metrics', apiKeyAuth({ apiKey: config.server.apiKey }));
          http.get('/metrics', async (c) => c.text(await metrics.registry.metrics(), 200, { 'content-type': metrics.registry.contentType }));
        },
      });
      return startHttpServer(app, { host: serveOptions.host ?? config.server.host, port: serveOptions.port ?? config.server.port });
    },
    health: checkHealth,
    close() {
      closing ??= (async () => {
        await runtime.drain();
        await tools.close();
        await store.close();
      })();
      return closing;
    },
  };
}

async function createToolHosts(config: PalaverConfig, primary: ModelProvider, localTools: readonly LocalTool[], logger: Logger) {
  const hosts: ToolHost[] = [];
  const hostedMcp: HostedMcpSpec[] = [];
  if (localTools.length > 0) hosts.push(new LocalToolHost(localTools));
  for (const server of config.mcp.servers) {
    if (server.mode === 'hosted') {
      if (!primary.capabilities.hostedMcp) {
        throw new ConfigError(`MCP server ${server.label} is in hosted mode, which needs model.provider "openai-responses"`, [
          { path: 'mcp.servers.mode', message: 'hosted needs openai-responses' },
        ]);
      }
      hostedMcp.push(toHostedMcpSpec(server));
      continue;
    }
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

async function loadToolsModule(path: string): Promise<LocalTool[]> {
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
