import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { parseConfig, resolveConfigPaths, secretsOf, type PalaverConfig, type PalaverConfigInput } from './config/index.js';
import { createLogger, withSecretScrubbing, type Logger } from './observability/logger.js';
import { ToolWorkerMetrics } from './observability/tool-worker-metrics.js';
import { connectRedis } from './platform/redis-connection.js';
import { TOOL_WORKER_DEFAULTS, ToolWorker, type ToolWorkerSettings } from './queue/tool-worker.js';
import { InlineToolDispatcher } from './runtime/tools/inline-dispatcher.js';
import { ToolRegistry } from './runtime/tools/tool-registry.js';
import type { RunningHttpServer } from './server/http-server.js';
import type { LocalTool } from './tools/define-tool.js';
import { createToolHosts, loadToolsModule } from './tool-hosts.js';
import { createOutgoingHttp } from './platform/outgoing-http.js';
import { proxySettingsFromEnv } from './config/env-proxy.js';

// The composition root of `palaver worker`, beside app.ts (the runtime's): the same config file, the same tool hosts
// (tool-hosts.ts), and only what running tools needs — no store, model, channels or turn pipeline.

export interface ToolWorkerOptions {
  /** Local tools besides those of `agent.toolsModule`. */
  readonly tools?: readonly LocalTool[];
  /** Defaults to a pino logger at `config.log.level` on stdout. */
  readonly logger?: Logger;
  /** Folder that relative paths in the config are resolved against (default: the working folder). */
  readonly cwd?: string;
  /** Serve `/metrics` and `/health` on this port (0: a free one); none by default. */
  readonly metricsPort?: number;
  /** Interface of the metrics server; default `config.server.host`. */
  readonly metricsHost?: string;
  /** Consumer name in the group; default `<host>-<pid>-<random>`, unique per process. */
  readonly workerId?: string;
  /** Tuning beyond the config (`concurrency`, `blockMs`, `resultTtlMs`, `heartbeatMs`). */
  readonly tuning?: Partial<Pick<ToolWorkerSettings, 'concurrency' | 'blockMs' | 'resultTtlMs' | 'heartbeatMs'>>;
  /** Collect Node's default process metrics too. */
  readonly processMetrics?: boolean;
}

/** A running tool worker. */
export interface RunningToolWorker {
  readonly workerId: string;
  readonly config: PalaverConfig;
  readonly metrics: ToolWorkerMetrics;
  readonly logger: Logger;
  /** The metrics server, when `metricsPort` was given. */
  readonly metricsServer: RunningHttpServer | undefined;
  /** Stops reading, finishes the calls it holds, then closes the metrics server, Redis and the tool hosts. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts a tool worker from a Palaver config: the tool hosts of `agent.toolsModule` and `mcp.servers`, the consumer
 * group `tools.group` on `tools.stream` in `redis`. Resolves once it reads.
 * @throws ConfigError for an invalid config; an Error when Redis cannot be reached.
 */
export async function startToolWorker(input: PalaverConfigInput | PalaverConfig, options: ToolWorkerOptions = {}): Promise<RunningToolWorker> {
  const config = resolveConfigPaths(parseConfig(input), options.cwd ?? process.cwd());
  const secrets = new Set(secretsOf(config));
  const logger = options.logger ? withSecretScrubbing(options.logger, secrets) : createLogger({ level: config.log.level, format: config.log.format, secrets });
  const workerId = options.workerId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const metrics = new ToolWorkerMetrics({ defaultMetrics: options.processMetrics ?? false });
  const moduleTools = config.agent.toolsModule ? await loadToolsModule(config.agent.toolsModule) : [];
  // The worker's own connections to MCP servers, through the proxy the environment names; closed when it stops.
  const http = createOutgoingHttp({ proxy: proxySettingsFromEnv() });
  const { hosts } = await createToolHosts(config, undefined, [...moduleTools, ...(options.tools ?? [])], logger, false, http.fetch);
  // No role policy: roles, focus ids and per-turn limits were checked by the runtime before it published the call.
  const registry = new ToolRegistry(hosts);
  const dispatcher = new InlineToolDispatcher(registry);
  let redis;
  try {
    redis = await connectRedis(config.redis, { logger, name: `worker:${workerId}` });
  } catch (error) {
    await dispatcher.close();
    await http.close();
    throw error;
  }
  const worker = new ToolWorker({
    redis,
    dispatcher,
    listTools: async () => {
      const set = await registry.toolsFor(null, (host, error) => logger.warn({ host, err: error }, 'tool host cannot list its tools'));
      return set.specs.map((spec) => {
        // The tool's own progress label travels with it, so people see it, not the generic "Working on it…".
        const label = registry.labelOf(spec.name);
        return { name: spec.name, description: spec.description, inputSchema: { ...spec.parameters }, ...(label === undefined ? {} : { label }) };
      });
    },
    settings: {
      workerId,
      stream: config.tools.stream,
      group: config.tools.group,
      maxAttempts: config.tools.maxAttempts,
      reclaimIdleMs: config.tools.reclaimIdleMs,
      maxResultChars: config.tools.maxResultChars,
      resultSecret: config.tools.resultSecret,
      ...TOOL_WORKER_DEFAULTS,
      ...options.tuning,
    },
    metrics,
    logger,
  });
  let metricsServer: RunningHttpServer | undefined;
  try {
    await worker.start();
    if (options.metricsPort !== undefined) metricsServer = await serveMetrics(metrics, config, options.metricsHost ?? config.server.host, options.metricsPort);
  } catch (error) {
    await worker.stop().catch(() => undefined);
    await redis.close();
    await dispatcher.close();
    await http.close();
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    workerId,
    config,
    metrics,
    logger,
    metricsServer,
    stop() {
      stopping ??= (async () => {
        await worker.stop();
        await metricsServer?.close();
        await redis.close();
        await dispatcher.close();
        await http.close();
      })();
      return stopping;
    },
  };
}

/** `/metrics` (behind `server.apiKey`, as the runtime's) and `/health` of a worker. */
async function serveMetrics(metrics: ToolWorkerMetrics, config: PalaverConfig, host: string, port: number): Promise<RunningHttpServer> {
  const { Hono } = await import('hono');
  const { apiKeyAuth, startHttpServer } = await import('./server/index.js');
  const app = new Hono();
  app.get('/health', (c) => c.json({ ok: true }));
  app.use('/metrics', apiKeyAuth({ apiKey: config.server.apiKey }));
  app.get('/metrics', async (c) => c.text(await metrics.registry.metrics(), 200, { 'content-type': metrics.registry.contentType }));
  return startHttpServer(app, { host, port });
}
