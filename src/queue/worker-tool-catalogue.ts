import type { ToolCallContext, ToolDescriptor, ToolHost, ToolResult } from '../domain/ports/tool-host.js';
import type { Logger } from '../observability/logger.js';
import type { RedisConnection } from '../platform/redis-connection.js';
import { parseEntry, toolCatalogue, type ToolCatalogue } from './wire.js';

/**
 * The tools live workers serve, as a tool host of the runtime (`tools.dispatch: "streams"`): read from the
 * catalogue keys workers write with a TTL their heartbeat renews (`tools.catalogue:<worker id>`), so a worker that
 * stops is gone from the offer once its key expires. The runtime never connects to the MCP servers behind them.
 * Role allowlists, the focus id check and per-turn limits apply to these tools as to local ones: they are the
 * runtime's, before dispatch. Calls go through the streams dispatcher, not through `call` here.
 */
export class WorkerToolCatalogue implements ToolHost {
  readonly name = 'workers';
  readonly #redis: RedisConnection;
  readonly #refreshMs: number;
  readonly #logger: Logger | undefined;
  readonly #approvals: ReadonlyMap<string, Pick<ToolDescriptor, 'approval' | 'describe'>>;
  #tools: readonly ToolDescriptor[] = [];
  #signature = '';
  #readAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<readonly ToolDescriptor[]> | undefined;

  /**
   * `refreshMs`: how long one read of the catalogue serves (default 1 s). `approvals`: the runtime's own approval
   * rules by tool name (its tools module, `mcp.servers[].approval`): who approves a call is the runtime's decision,
   * never a worker's, so a tool a worker serves waits for its yes like a local one.
   */
  constructor(
    redis: RedisConnection,
    options: {
      readonly refreshMs?: number;
      readonly logger?: Logger;
      readonly approvals?: ReadonlyMap<string, Pick<ToolDescriptor, 'approval' | 'describe'>>;
    } = {},
  ) {
    this.#redis = redis;
    this.#refreshMs = options.refreshMs ?? 1_000;
    this.#logger = options.logger;
    this.#approvals = options.approvals ?? new Map();
  }

  /**
   * What live workers serve; a name two workers serve is described by the first by worker id. The same array comes
   * back while nothing changed, so the registry keeps its tool sets.
   * @throws when Redis cannot be read (the registry then offers no worker tools for that turn and logs why).
   */
  list(): Promise<readonly ToolDescriptor[]> {
    if (performance.now() - this.#readAt < this.#refreshMs) return Promise.resolve(this.#tools);
    this.#reading ??= this.#read().finally(() => (this.#reading = undefined));
    return this.#reading;
  }

  /** The live workers' catalogues, by worker id (for `palaver doctor` and tests). */
  async catalogues(): Promise<ToolCatalogue[]> {
    const keys: string[] = [];
    for await (const batch of this.#redis.client.scanIterator({ MATCH: this.#redis.key('tools.catalogue:*'), COUNT: 500 })) keys.push(...batch);
    if (keys.length === 0) return [];
    const values = await this.#redis.client.mGet(keys);
    const catalogues: ToolCatalogue[] = [];
    values.forEach((value, index) => {
      const catalogue = parseEntry(toolCatalogue, value ?? undefined);
      if (catalogue) catalogues.push(catalogue);
      else if (value !== null) this.#logger?.warn({ key: keys[index] }, 'ignored a malformed tool catalogue');
    });
    return catalogues.sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0));
  }

  async call(name: string, _args: Readonly<Record<string, unknown>>, _ctx: ToolCallContext): Promise<ToolResult> {
    return { content: `Tool ${name} runs on tool workers: dispatch it through the streams dispatcher.`, isError: true };
  }

  async close(): Promise<void> {}

  async #read(): Promise<readonly ToolDescriptor[]> {
    const descriptors = new Map<string, ToolDescriptor>();
    for (const catalogue of await this.catalogues()) {
      for (const tool of catalogue.tools) {
        if (!descriptors.has(tool.name))
          descriptors.set(tool.name, {
            name: tool.name,
            description: tool.description,
            parameters: tool.inputSchema,
            source: `worker:${catalogue.workerId}`,
            ...(tool.label === undefined ? {} : { label: tool.label }),
            ...this.#approvals.get(tool.name),
          });
      }
    }
    const tools = [...descriptors.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    // The offer, not who serves it, decides whether the model's tool list changed.
    const signature = JSON.stringify(tools.map(({ source: _source, ...tool }) => tool));
    if (signature !== this.#signature) {
      this.#signature = signature;
      this.#tools = tools;
    }
    this.#readAt = performance.now();
    return this.#tools;
  }
}
