import type { PalaverConfig } from '../config/schema.js';
import type { Store } from '../domain/ports/store.js';
import type { ToolDescriptor } from '../domain/ports/tool-host.js';
import type { Logger } from '../observability/logger.js';
import type { PalaverMetrics } from '../observability/metrics.js';
import { ToolDispatchMetrics } from '../observability/tool-dispatch-metrics.js';
import { connectRedis, describeRedisUrl } from '../platform/redis-connection.js';
import { streamBacklog } from './stream-backlog.js';
import { StreamsToolDispatcher } from './streams-dispatcher.js';
import { WorkerToolCatalogue } from './worker-tool-catalogue.js';

/** The runtime side of `tools.dispatch: "streams"`, as `createPalaver` wires it. */
export interface StreamsTools {
  readonly dispatcher: StreamsToolDispatcher;
  /** The tool host offering what live workers serve. */
  readonly catalogue: WorkerToolCatalogue;
  /** Redis answers a ping (for /health and `palaver doctor`). */
  health(): Promise<{ ok: boolean; detail?: string }>;
  /**
   * Calls waiting for a worker (not yet read by the group, or read and not acknowledged) and calls given up after
   * `tools.maxAttempts` (the `<stream>.dead` stream), for the operators' overview.
   */
  backlog(): Promise<{ readonly backlog: number; readonly deadLetters: number }>;
}

/**
 * Connects to `redis.url`, starts the streams dispatcher (its response reader and outbox relay) and the worker tool
 * catalogue, and registers the runtime's dispatch metrics. `dispatcher.close()` closes the Redis connection.
 * @throws when Redis cannot be reached (the message names host and port, never the password).
 */
export async function startStreamsTools(
  config: PalaverConfig,
  store: Store,
  logger: Logger,
  metrics: PalaverMetrics,
  approvals?: ReadonlyMap<string, Pick<ToolDescriptor, 'approval' | 'describe'>>,
): Promise<StreamsTools> {
  const redis = await connectRedis(config.redis, { logger, name: 'runtime' });
  const streamKey = redis.key(config.tools.stream);
  const dispatchMetrics = new ToolDispatchMetrics(metrics.registry, {
    length: () => redis.client.xLen(streamKey),
    pending: async () => (await redis.client.xPending(streamKey, config.tools.group)).pending,
  });
  let dispatcher: StreamsToolDispatcher;
  try {
    dispatcher = await StreamsToolDispatcher.start({ redis, store, settings: config.tools, logger, metrics: dispatchMetrics, closeConnection: true });
  } catch (error) {
    await redis.close();
    throw error;
  }
  logger.info(
    { redis: describeRedisUrl(config.redis.url), stream: config.tools.stream, responseChannel: dispatcher.responseChannel },
    'tool calls go to workers over Redis Streams',
  );
  return {
    dispatcher,
    catalogue: new WorkerToolCatalogue(redis, { logger, ...(approvals ? { approvals } : {}) }),
    async backlog() {
      const [backlog, deadLetters] = await Promise.all([
        streamBacklog(redis, config.tools.stream, config.tools.group),
        redis.client.xLen(redis.key(`${config.tools.stream}.dead`)),
      ]);
      return { backlog, deadLetters };
    },
    async health() {
      try {
        await redis.client.ping();
        return { ok: true };
      } catch (error) {
        return { ok: false, detail: (error as Error).message };
      }
    },
  };
}
