import type { RedisSettings } from '../../src/platform/redis-connection.js';
import { connectRedis } from '../../src/platform/redis-connection.js';
import { parseEntry, streamEvent, type ToolCallCancelled, type ToolCallCompleted, type ToolCallRequested, type ToolCatalogue } from '../../src/queue/wire.js';
import { InlineToolDispatcher } from '../../src/runtime/tools/inline-dispatcher.js';
import type { ToolRegistry } from '../../src/runtime/tools/tool-registry.js';

/**
 * A tool worker small enough to read, following src/queue/wire.ts, for the runtime side's tests until `palaver
 * worker` exists: reads the group, honours cancel entries, runs calls on a registry, keeps the first result of a
 * call and sends it again for a repeat, answers on the call's response stream, acknowledges, and publishes its
 * catalogue with a TTL.
 */
export interface StandInWorker {
  /** Every call delivered to it (repeats included). */
  readonly delivered: ToolCallRequested[];
  /** Calls it ran. */
  readonly ran: ToolCallRequested[];
  readonly cancelled: ToolCallCancelled[];
  close(): Promise<void>;
}

export interface StandInWorkerOptions {
  readonly redis: RedisSettings;
  readonly registry: ToolRegistry;
  readonly stream?: string;
  readonly group?: string;
  readonly workerId?: string;
  /** Attempts below this are taken and dropped without an answer (a worker that died holding them). */
  readonly answerFromAttempt?: number;
}

export async function startStandInWorker(options: StandInWorkerOptions): Promise<StandInWorker> {
  const stream = options.stream ?? 'events.plugins';
  const group = options.group ?? 'plugins-workers';
  const workerId = options.workerId ?? 'stand-in-1';
  const redis = await connectRedis(options.redis, { name: workerId });
  const reader = await redis.blockingClient('reader');
  const streamKey = redis.key(stream);
  const dispatcher = new InlineToolDispatcher(options.registry);
  const delivered: ToolCallRequested[] = [];
  const ran: ToolCallRequested[] = [];
  const cancelled: ToolCallCancelled[] = [];
  const cancelledRoutes = new Set<string>();
  let closed = false;

  const ensureGroup = async () => {
    await redis.client.xGroupCreate(streamKey, group, '0', { MKSTREAM: true }).catch((error: Error) => {
      if (!/BUSYGROUP/.test(error.message)) throw error;
    });
  };
  const heartbeat = async () => {
    const specs = (await options.registry.toolsFor(null)).specs;
    const catalogue: ToolCatalogue = {
      workerId,
      at: Date.now(),
      tools: specs.map((spec) => ({ name: spec.name, description: spec.description, inputSchema: spec.parameters as Record<string, unknown> })),
    };
    await redis.client.set(redis.key(`tools.catalogue:${workerId}`), JSON.stringify(catalogue), { expiration: { type: 'PX', value: 3_000 } });
  };
  await ensureGroup();
  await heartbeat();
  const beat = setInterval(() => void heartbeat().catch(() => undefined), 500);

  const handle = async (id: string, data: string | undefined) => {
    const event = parseEntry(streamEvent, data);
    if (event?.eventType === 'PluginToolCallCancelled') {
      cancelled.push(event);
      cancelledRoutes.add(`${event.correlationId}:${event.toolCallId}`);
    } else if (event?.eventType === 'PluginToolCallRequested') {
      delivered.push(event);
      const route = `${event.correlationId}:${event.toolCallId}`;
      if (!cancelledRoutes.has(route) && event.attempt >= (options.answerFromAttempt ?? 1)) {
        const resultKey = redis.key(`tools.result:${route}`);
        let answer = await redis.client.get(resultKey);
        if (answer === null) {
          ran.push(event);
          const result = await dispatcher.dispatch({
            callId: event.toolCallId,
            idempotencyKey: event.idempotencyKey,
            tool: event.toolName,
            arguments: event.arguments,
            userId: event.userId,
            accounts: event.accounts,
            sessionId: event.sessionId,
            conversationId: event.conversationId,
            correlationId: event.correlationId,
            role: event.role,
            flowState: event.flowState,
          });
          const completed: ToolCallCompleted = {
            eventType: 'PluginToolCallCompleted',
            correlationId: event.correlationId,
            toolCallId: event.toolCallId,
            content: result.content,
            ...(result.structured === undefined ? {} : { structured: result.structured }),
            isError: result.isError,
            effects: { ...result.effects } as ToolCallCompleted['effects'],
            durationMs: result.durationMs,
            workerId,
          };
          await redis.client.set(resultKey, JSON.stringify(completed), { condition: 'NX', expiration: { type: 'PX', value: 600_000 } });
          answer = (await redis.client.get(resultKey)) ?? JSON.stringify(completed);
        }
        await redis.client.xAdd(redis.key(event.responseChannel), '*', { data: answer });
      }
    }
    await redis.client.xAck(streamKey, group, id);
  };

  const loop = (async () => {
    while (!closed) {
      try {
        const reply = await reader.xReadGroup(group, workerId, { key: streamKey, id: '>' }, { COUNT: 10, BLOCK: 1_000 });
        if (!Array.isArray(reply)) continue;
        const messages = (reply as { messages: { id: string; message: Record<string, string> }[] }[]).flatMap((entries) => entries.messages);
        // Cancels first: a call cancelled in the same batch is not started.
        const isCancel = (message: (typeof messages)[number]) => parseEntry(streamEvent, message.message.data)?.eventType === 'PluginToolCallCancelled';
        for (const message of [...messages.filter(isCancel), ...messages.filter((message) => !isCancel(message))])
          await handle(message.id, message.message.data);
      } catch (error) {
        if (closed) return;
        if (/NOGROUP/.test((error as Error).message)) await ensureGroup().catch(() => undefined);
        else await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  })();

  return {
    delivered,
    ran,
    cancelled,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(beat);
      await redis.close();
      await loop;
    },
  };
}
