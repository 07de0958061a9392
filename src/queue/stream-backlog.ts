import type { RedisConnection } from '../platform/redis-connection.js';

/**
 * Calls waiting on the request stream: not yet read by the workers' group, or read and not acknowledged. No group
 * yet (no worker ever started): every entry waits. Redis cannot tell the group's `lag` once the entry it read last is
 * deleted (workers delete each entry they acknowledge); the stream then holds exactly the waiting calls, so its
 * length is the answer.
 */
export async function streamBacklog(redis: RedisConnection, stream: string, group: string): Promise<number> {
  const key = redis.key(stream);
  const groups = await redis.client.xInfoGroups(key).catch(() => []);
  const ours = groups.find((entry) => String(entry.name) === group);
  if (ours === undefined || ours.lag === null) return redis.client.xLen(key);
  return Number(ours.pending) + Number(ours.lag);
}
