import type { PalaverConfig } from '../config/index.js';
import { connectRedis, describeRedisUrl } from '../platform/redis-connection.js';
import { parseEntry, toolCatalogue } from '../queue/wire.js';

export type StreamsCheck = { readonly name: string; readonly ok: boolean; readonly detail: string };

/**
 * `palaver doctor` for `tools.dispatch: "streams"`: Redis answers, the workers' consumer group exists on the stream,
 * and at least one worker is alive (its catalogue heartbeat is fresh), with the backlog and dead letters as detail.
 */
export async function checkToolStreams(config: PalaverConfig): Promise<StreamsCheck[]> {
  const where = describeRedisUrl(config.redis.url);
  let redis;
  try {
    redis = await connectRedis(config.redis, { name: 'doctor' });
    await redis.client.ping();
  } catch (error) {
    return [{ name: 'redis', ok: false, detail: `${(error as Error).message}. Check redis.url or PALAVER_REDIS_URL.` }];
  }
  try {
    const checks: StreamsCheck[] = [
      {
        name: 'redis',
        ok: true,
        detail: `${where} answers (${config.redis.keyPrefix === '' ? 'keys without a prefix' : `keys under "${config.redis.keyPrefix}"`})`,
      },
    ];
    const stream = redis.key(config.tools.stream);
    const { client } = redis;
    const groups = (await client.exists(stream)) === 1 ? await client.xInfoGroups(stream) : [];
    const group = groups.find((candidate) => candidate.name === config.tools.group);
    if (group === undefined) {
      checks.push({
        name: 'tool workers group',
        ok: false,
        detail: `no group "${config.tools.group}" on ${stream}: no worker has ever joined. Start one with \`palaver worker\`.`,
      });
    } else {
      const backlog = await client.xLen(stream);
      const dead = await client.xLen(redis.key(`${config.tools.stream}.dead`));
      checks.push({
        name: 'tool workers group',
        ok: true,
        detail: `"${config.tools.group}" on ${stream}: ${group.pending} call(s) being run, ${backlog} entries in the stream, ${dead} dead letter(s)`,
      });
    }
    const workers: string[] = [];
    for await (const keys of client.scanIterator({ MATCH: redis.key('tools.catalogue:*'), COUNT: 500 })) {
      for (const key of keys) {
        const catalogue = parseEntry(toolCatalogue, (await client.get(key)) ?? undefined);
        if (catalogue) workers.push(`${catalogue.workerId} (${catalogue.tools.length} tools)`);
      }
    }
    checks.push(
      workers.length > 0
        ? { name: 'live tool workers', ok: true, detail: workers.join(', ') }
        : { name: 'live tool workers', ok: false, detail: 'none: tool calls will time out until a `palaver worker` runs with this config' },
    );
    return checks;
  } finally {
    await redis.close();
  }
}
