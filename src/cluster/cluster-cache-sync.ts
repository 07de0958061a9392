import { z } from 'zod';
import type { ClusterBus } from '../domain/ports/cluster-bus.js';
import type { Logger } from '../observability/logger.js';
import type { CacheChange, ConversationCache } from '../runtime/conversation-cache.js';
import { ClusterPeers } from './cluster-peers.js';

const id = z.string().min(1).max(255);

/** What a `cache` message may say: anyone who reaches the database or Redis can publish one, so it is checked. */
const cacheChangeSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('account'), namespace: id, accountId: id }),
  z.strictObject({ kind: z.literal('state'), userId: id }),
  z.strictObject({ kind: z.literal('profile'), userId: id }),
  z.strictObject({ kind: z.literal('history'), sessionId: id }),
]);

/** The cache kept in step with the other processes, and who they are. */
export interface ClusterCacheSync {
  /** The other processes this one knows of (0: it announces nothing). */
  readonly peers: ClusterPeers;
  /** Stops it (before the bus closes). */
  stop(): Promise<void>;
}

/**
 * Keeps the caches of the processes on one database true: every change this process's cache is told of (a write
 * through after a store write, a forget) goes out on the bus's `cache` topic while other processes listen (see
 * {@link ClusterPeers}: a process alone encodes and sends nothing), and every change another process announces is
 * forgotten here. When the bus lost its connection, everything is forgotten, since what was announced meanwhile
 * never arrives. Publishing is not awaited: the change is stored already, and a notification lost on the way is
 * bounded by `cache.ttlMs`.
 */
export async function startClusterCacheSync(
  cache: ConversationCache,
  bus: ClusterBus,
  logger: Logger,
  options: { readonly presenceGraceMs?: number } = {},
): Promise<ClusterCacheSync> {
  const peers = await ClusterPeers.start({
    bus,
    logger,
    // What the other process changed before it heard of this one was not announced here: read it afresh.
    onMet: () => cache.clear(),
    ...(options.presenceGraceMs === undefined ? {} : { graceMs: options.presenceGraceMs }),
  });
  const unsubscribe = await bus.subscribe('cache', (message, from) => {
    if (from === bus.processId) return;
    peers.heardFrom(from);
    const parsed = cacheChangeSchema.safeParse(message);
    if (!parsed.success) {
      logger.warn({ from }, 'cluster bus: ignored a cache message that is not a cache change');
      return;
    }
    cache.invalidate(parsed.data);
    logger.debug({ change: parsed.data, from }, 'cache entry forgotten: another process changed it');
  });
  const stopObserving = cache.observe((change: CacheChange) => {
    if (peers.alone) return;
    bus.publish('cache', change).catch((error: unknown) => {
      logger.warn({ err: error, change: change.kind }, 'could not tell the other processes about a cache change; their entry expires with cache.ttlMs');
    });
  });
  const stopReconnect = bus.onReconnect(() => {
    cache.clear();
    // Who listens may have changed while this process could not hear: it greets again.
    peers.greet();
    logger.info('cache cleared: changes announced while the cluster bus was disconnected are lost');
  });
  return {
    peers,
    stop: async () => {
      stopObserving();
      stopReconnect();
      await peers.stop();
      await unsubscribe().catch(() => {});
    },
  };
}
