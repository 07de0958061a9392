import type { PalaverConfig } from '../config/schema.js';
import type { ClusterBus } from '../domain/ports/cluster-bus.js';
import type { Logger } from '../observability/logger.js';
import type { ConversationCache } from '../runtime/conversation-cache.js';
import { dialectOfUrl } from '../store/dialects.js';
import { type ClusterCacheSync, startClusterCacheSync } from './cluster-cache-sync.js';
import { LocalBus } from './local-bus.js';

/** The buses `cluster.bus` names, `auto` resolved. */
export type ClusterBusKind = 'local' | 'postgres' | 'redis';

/**
 * The bus `cluster.bus` asks for; `auto`: LISTEN/NOTIFY on a PostgreSQL database (nothing more to run), none on SQLite
 * (one machine, one process), Redis on any other database (MySQL/MariaDB have no notifications).
 */
export function clusterBusKind(config: Pick<PalaverConfig, 'cluster' | 'database'>): ClusterBusKind {
  if (config.cluster.bus !== 'auto') return config.cluster.bus;
  return dialectOfUrl(config.database.url)?.defaultBus ?? 'redis';
}

/**
 * Opens the bus of this process; the PostgreSQL and Redis adapters load only when chosen.
 * @throws Error when the chosen server cannot be reached; the message says how to run one process without it.
 */
export async function openBus(
  config: Pick<PalaverConfig, 'cluster' | 'database' | 'redis'>,
  options: { readonly processId?: string; readonly logger?: Logger } = {},
): Promise<ClusterBus> {
  const kind = clusterBusKind(config);
  const common = {
    ...(options.processId === undefined ? {} : { processId: options.processId }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  };
  const hint = config.cluster.bus === 'auto' ? ` (cluster.bus "auto" chose ${kind} for this database; a single process can set cluster.bus to "local")` : '';
  try {
    switch (kind) {
      case 'local':
        return new LocalBus(common);
      case 'postgres': {
        const { PostgresBus } = await import('./postgres-bus.js');
        return await PostgresBus.open({ url: config.database.url, ...common });
      }
      case 'redis': {
        const { RedisBus } = await import('./redis-bus.js');
        return await RedisBus.open({ redis: config.redis, ...common });
      }
    }
  } catch (error) {
    throw new Error(`${(error as Error).message}${hint}`, { cause: error });
  }
}

/** The bus of this process with the cache kept in step over it; `close` stops both (after the channels, before the store). */
export interface ClusterBusHandle {
  readonly bus: ClusterBus;
  /**
   * Whether other processes can hear this bus (`postgres`, `redis`). On the `local` bus nobody else listens: no cache
   * change is announced and no reply event relayed, so a process alone encodes and publishes nothing.
   */
  readonly shared: boolean;
  close(): Promise<void>;
}

/**
 * Opens the bus `cluster.bus` names and starts keeping `cache` in step with the other processes over it.
 * @throws Error when the bus's server cannot be reached (nothing is left open then).
 */
export async function openClusterBus(
  config: Pick<PalaverConfig, 'cluster' | 'database' | 'redis'>,
  cache: ConversationCache,
  logger: Logger,
): Promise<ClusterBusHandle> {
  const kind = clusterBusKind(config);
  const bus = await openBus(config, { logger: logger.child({ component: 'cluster-bus' }) });
  const shared = kind !== 'local';
  let sync: ClusterCacheSync | undefined;
  try {
    if (shared) sync = await startClusterCacheSync(cache, bus, logger);
  } catch (error) {
    await bus.close();
    throw error;
  }
  logger.debug({ bus: kind, processId: bus.processId }, 'cluster bus open');
  let closing: Promise<void> | undefined;
  return {
    bus,
    shared,
    close: () =>
      (closing ??= (async () => {
        await sync?.stop();
        await bus.close();
      })()),
  };
}
