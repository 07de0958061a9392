import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Store } from '../domain/ports/store.js';
import type { ToolCallRequest, ToolCallResult, ToolDispatcher } from '../domain/ports/tool-dispatch.js';
import type { Logger } from '../observability/logger.js';
import type { ToolDispatchMetrics } from '../observability/tool-dispatch-metrics.js';
import type { RedisClient, RedisConnection } from '../platform/redis-connection.js';
import { hasValidSignature } from './result-signature.js';
import { ToolOutboxRelay } from './tool-outbox-relay.js';
import { parseEntry, toolCallCompleted, toolCallRequested, type ToolCallCancelled, type ToolCallCompleted, type ToolCallRequested } from './wire.js';

/** The `tools` settings the runtime side of streams dispatch uses. */
export interface StreamsDispatchSettings {
  readonly callTimeoutMs: number;
  readonly maxAttempts: number;
  readonly stream: string;
  readonly group: string;
  /** `tools.resultSecret`: when set, only results signed with it are used (result-signature.ts). */
  readonly resultSecret?: string | undefined;
}

export interface StreamsToolDispatcherOptions {
  readonly redis: RedisConnection;
  /** Where the call record and its outbox entry are written (one transaction). */
  readonly store: Pick<Store, 'transaction' | 'toolOutbox'>;
  readonly settings: StreamsDispatchSettings;
  readonly logger: Logger;
  readonly metrics?: ToolDispatchMetrics;
  /** Names this runtime's response stream; a fresh id per process by default. */
  readonly instanceId?: string;
  /** `close()` also closes `redis` (the dispatcher was given a connection of its own). */
  readonly closeConnection?: boolean;
  /** How often the relay retries due entries and checks Redis for lost data (default 1 s). */
  readonly sweepMs?: number;
}

/** The response stream of a runtime instance, unprefixed (workers prefix it with their own `redis.keyPrefix`). */
export function responseChannelOf(instanceId: string): string {
  return `rpc.plugins.responses:${instanceId}`;
}

type Waiter = (completed: ToolCallCompleted) => void;

/**
 * Runs tool calls on `palaver worker` processes over Redis Streams. A call is written to the store's tool outbox
 * with its call record, published by the relay, and answered on this runtime's response stream, which one blocking
 * reader per process follows and routes by correlation id and tool call id. An attempt waits `callTimeoutMs`; then
 * the call is published again (attempt + 1) up to `maxAttempts`, and after the last the model is told the tool did
 * not answer. An aborted turn writes a cancel entry that a worker honours when it has not started the call.
 * `dispatch` never rejects for a tool's failure or a timeout; it rejects only once the dispatcher is closed or the
 * store cannot take the call.
 */
export class StreamsToolDispatcher implements ToolDispatcher {
  readonly recordsCalls = true;
  readonly #options: StreamsToolDispatcherOptions;
  readonly #responseChannel: string;
  readonly #streamKey: string;
  readonly #relay: ToolOutboxRelay;
  /** Calls waiting for their result, by route (correlation id and tool call id). */
  readonly #waiters = new Map<string, Waiter>();
  /** The same call dispatched again while it runs shares the first dispatch. */
  readonly #inflight = new Map<string, Promise<ToolCallResult>>();
  readonly #closing = new AbortController();
  #reader: Promise<void> | undefined;
  #readerClient: RedisClient | undefined;
  #lastId = '0-0';
  #closed = false;

  private constructor(options: StreamsToolDispatcherOptions) {
    this.#options = options;
    // Every waiting call listens for the close: as many listeners as calls in flight is expected, not a leak.
    setMaxListeners(0, this.#closing.signal);
    this.#responseChannel = responseChannelOf(options.instanceId ?? randomUUID());
    this.#streamKey = options.redis.key(options.settings.stream);
    this.#relay = new ToolOutboxRelay({
      redis: options.redis,
      outbox: options.store.toolOutbox,
      stream: options.settings.stream,
      group: options.settings.group,
      responseChannel: this.#responseChannel,
      logger: options.logger,
      ...(options.sweepMs === undefined ? {} : { sweepMs: options.sweepMs }),
      onRepublished: (count) => options.metrics?.republished.inc(count),
    });
    // The response stream went with the rest of Redis's data: read it again from its start.
    this.#relay.onDataLost = () => (this.#lastId = '0-0');
  }

  /**
   * Starts the response reader and the outbox relay (creating the workers' group when missing).
   * @throws when Redis cannot be reached.
   * @example
   * const redis = await connectRedis(config.redis, { logger });
   * const dispatcher = await StreamsToolDispatcher.start({ redis, store, settings: config.tools, logger, closeConnection: true });
   */
  static async start(options: StreamsToolDispatcherOptions): Promise<StreamsToolDispatcher> {
    const dispatcher = new StreamsToolDispatcher(options);
    dispatcher.#readerClient = await options.redis.blockingClient('tool-results');
    dispatcher.#reader = dispatcher.#readResults(dispatcher.#readerClient);
    await dispatcher.#relay.start();
    return dispatcher;
  }

  /** This runtime's response stream (unprefixed), as the calls it publishes name it. */
  get responseChannel(): string {
    return this.#responseChannel;
  }

  /** Checks Redis for lost data and publishes what is due now, instead of at the next sweep (tests, shutdown). */
  sweep(): Promise<void> {
    return this.#relay.sweep();
  }

  dispatch(request: ToolCallRequest, options: { readonly signal?: AbortSignal } = {}): Promise<ToolCallResult> {
    if (this.#closed) return Promise.reject(new Error('The tool dispatcher is closed'));
    const route = routeOf(request.correlationId, request.callId);
    const running = this.#inflight.get(route);
    if (running) return running;
    const call = this.#run(request, route, options.signal).finally(() => this.#inflight.delete(route));
    this.#inflight.set(route, call);
    return call;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort();
    await this.#relay.close();
    if (this.#options.closeConnection) await this.#options.redis.close();
    else if (this.#readerClient?.isOpen) this.#readerClient.destroy();
    await this.#reader?.catch(() => undefined);
    await Promise.allSettled([...this.#inflight.values()]);
  }

  async #run(request: ToolCallRequest, route: string, signal: AbortSignal | undefined): Promise<ToolCallResult> {
    const { settings, store, metrics } = this.#options;
    const log = this.#options.logger.child({ correlationId: request.correlationId, tool: request.tool, toolCallId: request.callId });
    const started = performance.now();
    let completed: ToolCallCompleted | undefined;
    let wake: () => void = () => {};
    this.#waiters.set(route, (result) => {
      completed ??= result;
      wake();
    });
    try {
      for (let attempt = 1; attempt <= settings.maxAttempts; attempt++) {
        const payload = this.#payload(request, attempt);
        if (payload === undefined) {
          // Recorded all the same: the turn records its result, and this dispatcher is what records its calls.
          if (attempt === 1) await store.transaction((tx) => this.#record(tx, request));
          return failure(request, `The call to ${request.tool} could not be sent to a tool worker (its request is too large or malformed).`);
        }
        const entry = {
          callKey: request.idempotencyKey,
          responseChannel: this.#responseChannel,
          payload: JSON.stringify(payload),
          attempt,
          deadline: payload.deadline,
        };
        if (attempt === 1) {
          // The same call settled a moment ago (a resumed turn sends it again): its pending removal must not take this entry.
          await this.#relay.reopen(request.idempotencyKey);
          // The call's record and its entry in one commit (the turn journal leaves the record to this dispatcher).
          await store.transaction(async (tx) => {
            await this.#record(tx, request);
            await tx.toolOutbox.put(entry);
          });
        } else {
          await store.toolOutbox.put(entry);
        }
        if (completed === undefined) void this.#relay.publish(entry);
        const outcome = await this.#wait(
          settings.callTimeoutMs,
          signal,
          (resume) => (wake = resume),
          () => completed !== undefined,
        );
        if (completed !== undefined) {
          this.#relay.settle(request.idempotencyKey);
          if (!this.#verified(request, completed)) {
            // Not applied, not shown to the model: whoever wrote it, the call counts as failed.
            metrics?.calls.inc({ outcome: 'rejected' });
            log.warn({ attempt, workerId: completed.workerId }, 'tool result rejected: missing or wrong signature');
            return failure(request, `The tool ${request.tool} returned a result Palaver could not verify; it was not used.`);
          }
          const result = toResult(request, completed);
          metrics?.roundTripSeconds.observe((performance.now() - started) / 1000);
          metrics?.calls.inc({ outcome: result.isError ? 'error' : 'ok' });
          log.debug({ attempt, workerId: completed.workerId, isError: result.isError }, 'tool call answered by a worker');
          return result;
        }
        if (outcome === 'aborted') {
          metrics?.calls.inc({ outcome: 'cancelled' });
          await this.#cancel(request, log);
          return failure(request, `The call to ${request.tool} was cancelled.`);
        }
        if (outcome === 'closing') return failure(request, `The call to ${request.tool} was cut off: Palaver is shutting down.`);
        metrics?.attemptTimeouts.inc();
        log.warn({ attempt, maxAttempts: settings.maxAttempts, timeoutMs: settings.callTimeoutMs }, 'no tool worker answered in time');
      }
      metrics?.calls.inc({ outcome: 'timeout' });
      this.#relay.settle(request.idempotencyKey);
      const seconds = Math.round(settings.callTimeoutMs / 100) / 10;
      return failure(
        request,
        `The tool ${request.tool} did not answer: no tool worker returned a result after ${settings.maxAttempts} attempt${settings.maxAttempts === 1 ? '' : 's'} of ${seconds} s. It may not have run. Tell the person you could not do this right now.`,
      );
    } finally {
      this.#waiters.delete(route);
    }
  }

  /** With `resultSecret`, a result counts only when a worker holding the secret signed it as this call's answer. */
  #verified(request: ToolCallRequest, completed: ToolCallCompleted): boolean {
    const secret = this.#options.settings.resultSecret;
    if (secret === undefined) return true;
    return hasValidSignature(
      secret,
      { correlationId: request.correlationId, toolCallId: request.callId, toolName: request.tool, userId: request.userId, arguments: request.arguments },
      completed,
    );
  }

  /** Records the call as running (a call recorded before, e.g. by a turn resumed, keeps its record). */
  async #record(tx: Pick<Store, 'toolCalls'>, request: ToolCallRequest): Promise<void> {
    await tx.toolCalls.start({
      callId: request.idempotencyKey,
      sessionId: request.sessionId,
      userId: request.userId,
      correlationId: request.correlationId,
      name: request.tool,
      arguments: JSON.stringify(request.arguments),
      turnId: turnOf(request),
    });
  }

  /** Waits for a result, the attempt's timeout, the turn's abort or the dispatcher's close, whichever comes first. */
  #wait(
    timeoutMs: number,
    signal: AbortSignal | undefined,
    setWake: (wake: () => void) => void,
    done: () => boolean,
  ): Promise<'done' | 'timeout' | 'aborted' | 'closing'> {
    if (done()) return Promise.resolve('done');
    if (signal?.aborted) return Promise.resolve('aborted');
    if (this.#closing.signal.aborted) return Promise.resolve('closing');
    return new Promise((resolve) => {
      const finish = (outcome: 'done' | 'timeout' | 'aborted' | 'closing') => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#closing.signal.removeEventListener('abort', onClose);
        setWake(() => {});
        resolve(outcome);
      };
      const onAbort = () => finish('aborted');
      const onClose = () => finish('closing');
      const timer = setTimeout(() => finish('timeout'), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#closing.signal.addEventListener('abort', onClose, { once: true });
      setWake(() => finish('done'));
    });
  }

  #payload(request: ToolCallRequest, attempt: number): ToolCallRequested | undefined {
    const parsed = toolCallRequested.safeParse({
      eventType: 'PluginToolCallRequested',
      correlationId: request.correlationId,
      sessionId: request.sessionId,
      turn: turnOf(request),
      toolCallId: request.callId,
      idempotencyKey: request.idempotencyKey,
      toolName: request.tool,
      arguments: request.arguments,
      userId: request.userId,
      accounts: request.accounts.map((account) => ({ channel: account.channel, accountId: account.accountId })),
      conversationId: request.conversationId,
      role: request.role,
      flowState: request.flowState,
      responseChannel: this.#responseChannel,
      attempt,
      deadline: Date.now() + this.#options.settings.callTimeoutMs,
    } satisfies ToolCallRequested);
    return parsed.success ? parsed.data : undefined;
  }

  async #cancel(request: ToolCallRequest, log: Logger): Promise<void> {
    this.#relay.settle(request.idempotencyKey);
    const cancelled: ToolCallCancelled = { eventType: 'PluginToolCallCancelled', correlationId: request.correlationId, toolCallId: request.callId };
    try {
      await this.#options.redis.client.xAdd(this.#streamKey, '*', { data: JSON.stringify(cancelled) });
      log.info('tool call cancelled with its turn');
    } catch (error) {
      log.warn({ err: error }, 'tool call cancel entry not written');
    }
  }

  /** The one blocking reader of this runtime's response stream: routes each result to the call waiting for it. */
  async #readResults(client: RedisClient): Promise<void> {
    const key = this.#options.redis.key(this.#responseChannel);
    while (!this.#closed) {
      try {
        const reply = await client.xRead({ key, id: this.#lastId }, { BLOCK: 5_000, COUNT: 500 });
        if (!Array.isArray(reply)) continue;
        for (const stream of reply as { messages: { id: string; message: Record<string, string> }[] }[]) {
          for (const message of stream.messages) {
            this.#lastId = message.id;
            this.#route(message.message.data);
          }
        }
        // What was read is done with: the stream keeps only the entries not read yet.
        this.#options.redis.client.xTrim(key, 'MINID', this.#lastId).catch(() => undefined);
      } catch (error) {
        if (this.#closed) return;
        this.#options.logger.warn({ err: error }, 'reading tool results failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  #route(data: string | undefined): void {
    const completed = parseEntry(toolCallCompleted, data);
    if (completed === undefined) {
      this.#options.logger.warn('ignored a malformed entry on the tool response stream');
      return;
    }
    const waiter = this.#waiters.get(routeOf(completed.correlationId, completed.toolCallId));
    if (waiter) waiter(completed);
    else
      this.#options.logger.debug({ correlationId: completed.correlationId, toolCallId: completed.toolCallId }, 'tool result for a call no longer waited for');
  }
}

/** The turn of a call: its idempotency key is `<turn>:<call id>`. */
function turnOf(request: ToolCallRequest): string {
  const suffix = `:${request.callId}`;
  return request.idempotencyKey.endsWith(suffix) ? request.idempotencyKey.slice(0, -suffix.length) : request.idempotencyKey;
}

function routeOf(correlationId: string, toolCallId: string): string {
  return `${correlationId}\u0000${toolCallId}`;
}

function toResult(request: ToolCallRequest, completed: ToolCallCompleted): ToolCallResult {
  const effects = {
    ...(completed.effects.role === undefined ? {} : { role: completed.effects.role }),
    ...(completed.effects.flowState === undefined ? {} : { flowState: completed.effects.flowState }),
    ...(completed.effects.handoff === undefined ? {} : { handoff: completed.effects.handoff }),
  };
  return {
    callId: request.callId,
    content: completed.content,
    ...(completed.structured === undefined ? {} : { structured: completed.structured }),
    isError: completed.isError,
    effects,
    durationMs: completed.durationMs,
  };
}

function failure(request: ToolCallRequest, content: string): ToolCallResult {
  return { callId: request.callId, content, isError: true, effects: {}, durationMs: 0 };
}
