import { z } from 'zod';
import type { ClusterBus } from '../domain/ports/cluster-bus.js';
import type { Logger } from '../observability/logger.js';
import type { CacheChange, ConversationCache } from '../runtime/conversation-cache.js';

const id = z.string().min(1).max(255);

/** What a `cache` message may say: anyone who reaches the database or Redis can publish one, so it is checked. */
const cacheChangeSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('account'), namespace: id, accountId: id }),
  z.strictObject({ kind: z.literal('state'), userId: id }),
  z.strictObject({ kind: z.literal('profile'), userId: id }),
  z.strictObject({ kind: z.literal('history'), sessionId: id }),
]);

/**
 * Keeps the caches of the processes on one database true: every change this process's cache is told of (a write
 * through after a store write, a forget) goes out on the bus's `cache` topic, and every change another process
 * announces is forgotten here. When the bus lost its connection, everything is forgotten, since what was announced
 * meanwhile never arrives. Publishing is not awaited: the change is stored already, and a notification lost on the
 * way is bounded by `cache.ttlMs`.
 * @returns the function that stops it (before the bus closes).
 */
export async function startClusterCacheSync(cache: ConversationCache, bus: ClusterBus, logger: Logger): Promise<() => Promise<void>> {
  const unsubscribe = await bus.subscribe('cache', (message, from) => {
    if (from === bus.processId) return;
    const parsed = cacheChangeSchema.safeParse(message);
    if (!parsed.success) {
      logger.warn({ from }, 'cluster bus: ignored a cache message that is not a cache change');
      return;
    }
    cache.invalidate(parsed.data);
    logger.debug({ change: parsed.data, from }, 'cache entry forgotten: another process changed it');
  });
  const stopObserving = cache.observe((change: CacheChange) => {
    bus.publish('cache', change).catch((error: unknown) => {
      logger.warn({ err: error, change: change.kind }, 'could not tell the other processes about a cache change; their entry expires with cache.ttlMs');
    });
  });
  const stopReconnect = bus.onReconnect(() => {
    cache.clear();
    logger.info('cache cleared: changes announced while the cluster bus was disconnected are lost');
  });
  return async () => {
    stopObserving();
    stopReconnect();
    await unsubscribe().catch(() => {});
  };
}
