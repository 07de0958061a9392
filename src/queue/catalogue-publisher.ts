import type { Logger } from '../observability/logger.js';
import type { RedisConnection } from '../platform/redis-connection.js';
import type { ToolCatalogue } from './wire.js';

/** One tool as the catalogue lists it. */
export type CatalogueTool = ToolCatalogue['tools'][number];

/**
 * Keeps a worker's `ToolCatalogue` under `tools.catalogue:<workerId>`: written at start and on every heartbeat with
 * a TTL of three heartbeats, so a worker that dies drops out of the catalogue within that time, and deleted on a
 * clean stop. Each heartbeat lists the tools again, so an MCP server's changed list reaches the runtime.
 */
export class CataloguePublisher {
  readonly #redis: RedisConnection;
  readonly #workerId: string;
  readonly #listTools: () => Promise<readonly CatalogueTool[]>;
  readonly #heartbeatMs: number;
  readonly #logger: Logger;
  #timer: NodeJS.Timeout | undefined;
  #beat: Promise<void> = Promise.resolve();

  constructor(options: { redis: RedisConnection; workerId: string; listTools: () => Promise<readonly CatalogueTool[]>; heartbeatMs: number; logger: Logger }) {
    this.#redis = options.redis;
    this.#workerId = options.workerId;
    this.#listTools = options.listTools;
    this.#heartbeatMs = options.heartbeatMs;
    this.#logger = options.logger;
  }

  get key(): string {
    return this.#redis.key(`tools.catalogue:${this.#workerId}`);
  }

  /** Publishes now (rejects when that fails: a worker that cannot announce itself should not start), then on every heartbeat. */
  async start(): Promise<void> {
    await this.#publish();
    this.#timer = setInterval(() => {
      this.#beat = this.#publish().catch((error: unknown) => this.#logger.warn({ err: error }, 'tool catalogue heartbeat failed'));
    }, this.#heartbeatMs);
    this.#timer.unref();
  }

  /** Stops the heartbeat and removes the catalogue: the runtime stops offering what only this worker served. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#beat;
    await this.#redis.client.del(this.key);
  }

  async #publish(): Promise<void> {
    const catalogue: ToolCatalogue = { workerId: this.#workerId, at: Date.now(), tools: [...(await this.#listTools())] };
    await this.#redis.client.set(this.key, JSON.stringify(catalogue), { PX: this.#heartbeatMs * 3 });
  }
}
