import type { ToolCallRequest, ToolDispatcher, ToolEffects } from '../domain/ports/tool-dispatch.js';
import { capToolResult } from '../domain/tool-result-cap.js';
import type { Logger } from '../observability/logger.js';
import type { ToolWorkerMetrics } from '../observability/tool-worker-metrics.js';
import { CallClaims, callKeys, type CallKeys } from './call-claim.js';
import { CataloguePublisher, type CatalogueTool } from './catalogue-publisher.js';
import type { RedisClient, RedisConnection } from '../platform/redis-connection.js';
import { resultSignature } from './result-signature.js';
import { parseEntry, streamEvent, type ToolCallCompleted, type ToolCallRequested } from './wire.js';

export interface ToolWorkerSettings {
  /** Unique per process: the consumer name in the group and the catalogue's key. */
  readonly workerId: string;
  /** `tools.stream` and `tools.group`. */
  readonly stream: string;
  readonly group: string;
  /** `tools.maxAttempts`: starts of one call (on any worker) before it goes to `<stream>.dead`. */
  readonly maxAttempts: number;
  /** `tools.reclaimIdleMs`: an entry unacknowledged this long is taken over; also the claim's expiry. */
  readonly reclaimIdleMs: number;
  /** Calls run at once; reads ask for no more entries than there are free slots. */
  readonly concurrency: number;
  /** How long one XREADGROUP waits for entries: a stopping worker stops reading within this time. */
  readonly blockMs: number;
  /** How long a call's result (and its attempt count) is kept to answer repeats. */
  readonly resultTtlMs: number;
  /** Catalogue heartbeat; the catalogue lives three heartbeats. */
  readonly heartbeatMs: number;
  /** `tools.maxResultChars`: results are cut to it before they go on Redis (the runtime cuts again to its own). */
  readonly maxResultChars: number;
  /** `tools.resultSecret`: when set, every result this worker makes is signed with it (result-signature.ts). */
  readonly resultSecret?: string | undefined;
}

export const TOOL_WORKER_DEFAULTS = { concurrency: 64, blockMs: 1_000, resultTtlMs: 24 * 60 * 60 * 1000, heartbeatMs: 5_000 } as const;

/** A stream entry as node-redis hands it over. */
interface StreamEntry {
  readonly id: string;
  readonly message: Record<string, string>;
}

/** Response and dead-letter streams keep about this many entries. */
const STREAM_MAX_LENGTH = 100_000;

/**
 * A tool worker (`palaver worker`): reads tool calls from the stream in the consumer group, runs each through the
 * dispatcher (the same tool hosts as inline dispatch), sends the `ToolCallCompleted` to the entry's response stream
 * and acknowledges the entry.
 *
 * A call runs once per result: a worker claims it in Redis before it starts ({@link CallClaims}), keeps its first
 * result and sends that again for a repeat delivery. Entries a dead worker left unacknowledged are taken over after
 * `reclaimIdleMs` (XAUTOCLAIM); while a call runs, its holder keeps the entry fresh and the claim alive so nobody
 * else takes it. A call started `maxAttempts` times without a result goes to `<stream>.dead`, and the runtime gets a
 * failed result for the model. Every entry is parsed (wire.ts) before anything acts on it: a malformed one is
 * acknowledged and logged.
 *
 * An entry leaves the stream as it is acknowledged (`XACK` and `XDEL` in one `MULTI`), and a periodic `XTRIM MINID`
 * takes any acknowledged head left over: the stream holds only calls not read yet and calls pending, for reclaim.
 */
export class ToolWorker {
  readonly #redis: RedisConnection;
  readonly #dispatcher: ToolDispatcher;
  readonly #settings: ToolWorkerSettings;
  readonly #metrics: ToolWorkerMetrics;
  readonly #logger: Logger;
  readonly #claims: CallClaims;
  readonly #catalogue: CataloguePublisher;
  readonly #streamKey: string;
  readonly #deadKey: string;
  /** Calls running here, by claim key, with their entry ids: renewed on a timer, never started twice here. */
  readonly #running = new Map<string, { readonly entryId: string }>();
  /** Entries being handled (claimed or not), so a stop waits for every one. */
  readonly #handling = new Set<Promise<void>>();
  #reader: RedisClient | undefined;
  #stopping = false;
  #readLoop: Promise<void> | undefined;
  #timers: NodeJS.Timeout[] = [];
  #slotFreed: (() => void) | undefined;
  #stopped: Promise<void> | undefined;

  constructor(options: {
    redis: RedisConnection;
    dispatcher: ToolDispatcher;
    listTools: () => Promise<readonly CatalogueTool[]>;
    settings: ToolWorkerSettings;
    metrics: ToolWorkerMetrics;
    logger: Logger;
  }) {
    this.#redis = options.redis;
    this.#dispatcher = options.dispatcher;
    this.#settings = options.settings;
    this.#metrics = options.metrics;
    this.#logger = options.logger.child({ workerId: options.settings.workerId });
    this.#streamKey = this.#redis.key(this.#settings.stream);
    this.#deadKey = this.#redis.key(`${this.#settings.stream}.dead`);
    this.#claims = new CallClaims(this.#redis, this.#settings.workerId, {
      claimTtlMs: this.#settings.reclaimIdleMs,
      maxAttempts: this.#settings.maxAttempts,
      stateTtlMs: this.#settings.resultTtlMs,
    });
    this.#catalogue = new CataloguePublisher({
      redis: this.#redis,
      workerId: this.#settings.workerId,
      listTools: options.listTools,
      heartbeatMs: this.#settings.heartbeatMs,
      logger: this.#logger,
    });
  }

  get workerId(): string {
    return this.#settings.workerId;
  }

  /** Joins the group (creating stream and group when missing), publishes the catalogue and starts reading. */
  async start(): Promise<void> {
    await this.#ensureGroup();
    this.#reader = await this.#redis.blockingClient('tool-worker');
    await this.#catalogue.start();
    this.#readLoop = this.#read();
    const renewEvery = Math.max(50, Math.floor(this.#settings.reclaimIdleMs / 3));
    const reclaimEvery = Math.min(5_000, Math.max(100, Math.floor(this.#settings.reclaimIdleMs / 2)));
    void this.#trimAcknowledged();
    this.#timers.push(
      setInterval(() => void this.#renew(), renewEvery),
      setInterval(() => {
        void this.#reclaim();
        void this.#trimAcknowledged();
      }, reclaimEvery),
    );
    for (const timer of this.#timers) timer.unref();
    this.#logger.info({ stream: this.#streamKey, group: this.#settings.group }, 'tool worker reading');
  }

  /**
   * Stops reading (within `blockMs`), finishes every call it holds, removes its catalogue and, when it holds no
   * entry, leaves the group. The caller closes Redis and the tool hosts afterwards. Safe to call twice.
   */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      this.#stopping = true;
      this.#slotFreed?.();
      await this.#readLoop;
      for (const timer of this.#timers) clearInterval(timer);
      this.#timers = [];
      while (this.#handling.size > 0) await Promise.allSettled([...this.#handling]);
      await this.#trimming;
      await this.#catalogue.stop().catch((error: unknown) => this.#logger.warn({ err: error }, 'could not remove the tool catalogue'));
      await this.#leaveGroup().catch((error: unknown) => this.#logger.warn({ err: error }, 'could not leave the consumer group'));
      this.#logger.info('tool worker stopped');
    })();
    return this.#stopped;
  }

  async #ensureGroup(): Promise<void> {
    try {
      await this.#redis.client.xGroupCreate(this.#streamKey, this.#settings.group, '0', { MKSTREAM: true });
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('BUSYGROUP')) throw error;
    }
  }

  /** Deletes this consumer from the group, but only when no entry is pending for it (deleting would drop those). */
  async #leaveGroup(): Promise<void> {
    const { client } = this.#redis;
    const pending = await client.xPendingRange(this.#streamKey, this.#settings.group, '-', '+', 1, { consumer: this.#settings.workerId });
    if (pending.length === 0) await client.xGroupDelConsumer(this.#streamKey, this.#settings.group, this.#settings.workerId);
  }

  async #read(): Promise<void> {
    let backoffMs = 100;
    while (!this.#stopping) {
      const free = this.#settings.concurrency - this.#handling.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => (this.#slotFreed = resolve));
        continue;
      }
      let entries: StreamEntry[];
      try {
        const reply = await this.#reader!.xReadGroup(
          this.#settings.group,
          this.#settings.workerId,
          { key: this.#streamKey, id: '>' },
          { COUNT: free, BLOCK: this.#settings.blockMs },
        );
        entries = (reply as { messages: StreamEntry[] }[] | null)?.[0]?.messages ?? [];
        backoffMs = 100;
      } catch (error) {
        if (this.#stopping) break;
        // A Redis that restarted has lost the group with everything else: create it again and go on.
        if (error instanceof Error && error.message.startsWith('NOGROUP')) await this.#ensureGroup().catch(() => undefined);
        else this.#logger.warn({ err: error }, 'reading the tool stream failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, backoffMs));
        backoffMs = Math.min(backoffMs * 2, 2_000);
        continue;
      }
      for (const entry of entries) this.#track(this.#handle(entry));
    }
  }

  #track(handling: Promise<void>): void {
    this.#handling.add(handling);
    void handling.finally(() => {
      this.#handling.delete(handling);
      const freed = this.#slotFreed;
      this.#slotFreed = undefined;
      freed?.();
    });
  }

  /** Handles one entry; never rejects (a Redis failure leaves the entry pending, to be reclaimed). */
  async #handle(entry: StreamEntry): Promise<void> {
    const event = parseEntry(streamEvent, entry.message.data);
    try {
      if (event === undefined) {
        this.#logger.warn({ entryId: entry.id }, 'malformed tool stream entry acknowledged and dropped');
        this.#metrics.calls.inc({ tool: '', outcome: 'malformed' });
        await this.#ack(entry.id);
        return;
      }
      if (event.eventType === 'PluginToolCallCancelled') {
        const keys = callKeys(this.#redis, event.correlationId, event.toolCallId);
        await this.#redis.client
          .multi()
          .set(keys.cancelled, '1', { PX: this.#settings.resultTtlMs })
          .xAck(this.#streamKey, this.#settings.group, entry.id)
          .xDel(this.#streamKey, entry.id)
          .exec();
        this.#logger.debug({ correlationId: event.correlationId, toolCallId: event.toolCallId }, 'tool call cancelled');
        return;
      }
      await this.#handleRequest(entry.id, event, entry.message.data!);
    } catch (error) {
      this.#logger.warn({ err: error, entryId: entry.id, correlationId: event?.correlationId }, 'tool stream entry left pending after a Redis error');
    }
  }

  async #handleRequest(entryId: string, request: ToolCallRequested, raw: string): Promise<void> {
    const log = this.#logger.child({ correlationId: request.correlationId, toolCallId: request.toolCallId, tool: request.toolName });
    const count = (outcome: string) => this.#metrics.calls.inc({ tool: request.toolName, outcome });
    if (request.deadline < Date.now()) {
      // The runtime stopped waiting; it publishes the call again when it still wants it.
      log.info({ deadline: request.deadline }, 'tool call past its deadline skipped');
      count('expired');
      await this.#ack(entryId);
      return;
    }
    const keys = callKeys(this.#redis, request.correlationId, request.toolCallId);
    if (this.#running.has(keys.claim)) return; // Running here already (this entry reclaimed by ourselves, or a repeat).
    const claim = await this.#claims.claim(keys);
    switch (claim.kind) {
      case 'done':
        log.debug('repeat delivery answered with the kept result');
        count('duplicate');
        await this.#redis.client
          .multi()
          .xAdd(this.#responseKey(request), '*', { data: claim.result }, trim())
          .xAck(this.#streamKey, this.#settings.group, entryId)
          .xDel(this.#streamKey, entryId)
          .exec();
        return;
      case 'cancelled':
        log.info('cancelled tool call skipped');
        count('cancelled');
        await this.#ack(entryId);
        return;
      case 'busy':
        // Left pending: if the worker running it dies, this entry is reclaimed and the call finished from here.
        count('busy');
        return;
      case 'dead':
        await this.#deadLetter(entryId, request, raw, claim.attempts, claim.error, keys, log);
        return;
      case 'run':
        await this.#run(entryId, request, keys, claim.attempt, log);
        return;
    }
  }

  async #run(entryId: string, request: ToolCallRequested, keys: CallKeys, attempt: number, log: Logger): Promise<void> {
    this.#running.set(keys.claim, { entryId });
    const started = performance.now();
    try {
      let completed: ToolCallCompleted;
      try {
        const result = capToolResult(await this.#dispatcher.dispatch(toDispatchRequest(request)), this.#settings.maxResultChars);
        completed = this.#signed(request, {
          eventType: 'PluginToolCallCompleted',
          correlationId: request.correlationId,
          toolCallId: request.toolCallId,
          content: result.content,
          ...(result.structured === undefined ? {} : { structured: result.structured }),
          isError: result.isError,
          effects: wireEffects(result.effects),
          durationMs: result.durationMs,
          workerId: this.#settings.workerId,
        });
      } catch (error) {
        // The worker could not run it (a tool host is unusable): record why, free the claim and leave the entry
        // pending; it is reclaimed and tried again until `maxAttempts`.
        const message = error instanceof Error ? error.message : String(error);
        log.warn({ err: error, attempt }, 'tool call could not be run; it will be tried again');
        this.#metrics.calls.inc({ tool: request.toolName, outcome: 'failed' });
        this.#metrics.failures.inc({ tool: request.toolName });
        await this.#redis.client.multi().hSet(keys.call, 'error', message.slice(0, 2_000)).del(keys.claim).exec();
        return;
      }
      const seconds = (performance.now() - started) / 1000;
      this.#metrics.callSeconds.observe({ tool: request.toolName }, seconds);
      this.#metrics.calls.inc({ tool: request.toolName, outcome: completed.isError ? 'tool_error' : 'ok' });
      if (completed.isError) this.#metrics.failures.inc({ tool: request.toolName });
      const data = JSON.stringify(completed);
      await this.#redis.client
        .multi()
        .set(keys.result, data, { PX: this.#settings.resultTtlMs })
        .xAdd(this.#responseKey(request), '*', { data }, trim())
        .xAck(this.#streamKey, this.#settings.group, entryId)
        .xDel(this.#streamKey, entryId)
        .del(keys.claim)
        .exec();
      log.debug({ isError: completed.isError, ms: completed.durationMs, attempt }, 'tool call done');
    } finally {
      this.#running.delete(keys.claim);
    }
  }

  /** Gives up on a call: its entry to `<stream>.dead` with the last error, and a failed result the model reads. */
  async #deadLetter(entryId: string, request: ToolCallRequested, raw: string, attempts: number, error: string, keys: CallKeys, log: Logger): Promise<void> {
    const completed = this.#signed(request, {
      eventType: 'PluginToolCallCompleted',
      correlationId: request.correlationId,
      toolCallId: request.toolCallId,
      content: `The tool ${request.toolName} failed: it could not be completed after ${attempts} attempts.`,
      isError: true,
      effects: {},
      durationMs: 0,
      workerId: this.#settings.workerId,
    });
    const data = JSON.stringify(completed);
    await this.#redis.client
      .multi()
      .xAdd(this.#deadKey, '*', { data: raw, error: error || 'unknown', attempts: String(attempts), workerId: this.#settings.workerId, entryId }, trim())
      .set(keys.result, data, { PX: this.#settings.resultTtlMs })
      .xAdd(this.#responseKey(request), '*', { data }, trim())
      .xAck(this.#streamKey, this.#settings.group, entryId)
      .xDel(this.#streamKey, entryId)
      .exec();
    this.#metrics.calls.inc({ tool: request.toolName, outcome: 'dead' });
    this.#metrics.deadLetters.inc({ tool: request.toolName });
    log.warn({ attempts, error }, 'tool call moved to the dead-letter stream');
  }

  /** Keeps the calls running here ours: their claims alive and their entries fresh (idle 0), so no one reclaims them. */
  async #renew(): Promise<void> {
    if (this.#running.size === 0) return;
    const running = [...this.#running];
    try {
      await Promise.all([
        this.#claims.renew(running.map(([claim]) => claim)),
        this.#redis.client.xClaimJustId(
          this.#streamKey,
          this.#settings.group,
          this.#settings.workerId,
          0,
          running.map(([, { entryId }]) => entryId),
        ),
      ]);
    } catch (error) {
      this.#logger.warn({ err: error }, 'renewing running tool calls failed');
    }
  }

  #reclaiming = false;

  /** Takes over entries other workers left unacknowledged past `reclaimIdleMs` (they are presumed dead). */
  async #reclaim(): Promise<void> {
    if (this.#reclaiming || this.#stopping) return;
    this.#reclaiming = true;
    try {
      let start = '0-0';
      do {
        const free = this.#settings.concurrency - this.#handling.size;
        if (free <= 0) return;
        const reply = await this.#redis.client.xAutoClaim(this.#streamKey, this.#settings.group, this.#settings.workerId, this.#settings.reclaimIdleMs, start, {
          COUNT: free,
        });
        start = reply.nextId;
        // Entries trimmed or deleted while pending: nothing to run, only the pending record to clear.
        if (reply.deletedMessages.length > 0) await this.#redis.client.xAck(this.#streamKey, this.#settings.group, reply.deletedMessages);
        for (const message of reply.messages) {
          if (message === null) continue;
          this.#metrics.reclaims.inc();
          this.#logger.info({ entryId: message.id }, 'took over a tool call entry left idle past reclaimIdleMs');
          this.#track(this.#handle(message as StreamEntry));
        }
      } while (start !== '0-0' && !this.#stopping);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('NOGROUP')) await this.#ensureGroup().catch(() => undefined);
      else this.#logger.warn({ err: error }, 'reclaiming idle tool calls failed');
    } finally {
      this.#reclaiming = false;
    }
  }

  /** Acknowledges an entry and removes it from the stream in one step: a handled call has nothing left to reclaim. */
  async #ack(entryId: string): Promise<void> {
    await this.#redis.client.multi().xAck(this.#streamKey, this.#settings.group, entryId).xDel(this.#streamKey, entryId).exec();
  }

  #trimming: Promise<void> | undefined;

  /**
   * Removes the stream's acknowledged head, should any be left (entries an earlier version acknowledged and kept):
   * everything before the oldest entry still pending, or, with none pending, everything the group has read. What is
   * pending (to be reclaimed) or not read yet is kept.
   */
  #trimAcknowledged(): Promise<void> {
    this.#trimming ??= this.#trim().finally(() => (this.#trimming = undefined));
    return this.#trimming;
  }

  async #trim(): Promise<void> {
    try {
      const { client } = this.#redis;
      const groups = await client.xInfoGroups(this.#streamKey);
      const group = groups.find((entry) => String(entry.name) === this.#settings.group);
      if (group === undefined) return;
      // Read before the pending list: an entry delivered in between is after this id, so it is kept either way.
      const unread = idAfter(String(group['last-delivered-id']));
      const pending = await client.xPending(this.#streamKey, this.#settings.group);
      const keepFrom = pending.pending > 0 && pending.firstId !== null && compareIds(String(pending.firstId), unread) < 0 ? String(pending.firstId) : unread;
      await client.xTrim(this.#streamKey, 'MINID', keepFrom);
    } catch (error) {
      if (!(error instanceof Error) || !/NOGROUP|no such key/i.test(error.message)) this.#logger.warn({ err: error }, 'trimming the tool stream failed');
    }
  }

  /**
   * Signs a result this worker made, when `resultSecret` is set. Only here: a result read back from Redis (a repeat
   * delivery's kept result) goes out as it was stored, so the worker never signs what someone else wrote.
   */
  #signed(request: ToolCallRequested, completed: ToolCallCompleted): ToolCallCompleted {
    const secret = this.#settings.resultSecret;
    return secret === undefined ? completed : { ...completed, signature: resultSignature(secret, request, completed) };
  }

  #responseKey(request: ToolCallRequested): string {
    return this.#redis.key(request.responseChannel);
  }
}

/** The smallest stream id after `id` (`<ms>-<seq>`). */
function idAfter(id: string): string {
  const [ms = '0', seq = '0'] = id.split('-');
  const next = BigInt(seq) + 1n;
  return next > 18446744073709551615n ? `${BigInt(ms) + 1n}-0` : `${ms}-${next}`;
}

function compareIds(a: string, b: string): number {
  const [aMs = '0', aSeq = '0'] = a.split('-');
  const [bMs = '0', bSeq = '0'] = b.split('-');
  const byMs = BigInt(aMs) - BigInt(bMs);
  const diff = byMs !== 0n ? byMs : BigInt(aSeq) - BigInt(bSeq);
  return diff < 0n ? -1 : diff > 0n ? 1 : 0;
}

function trim() {
  return { TRIM: { strategy: 'MAXLEN', strategyModifier: '~', threshold: STREAM_MAX_LENGTH } } as const;
}

/** The dispatch port's request for a call read from the stream. */
function toDispatchRequest(request: ToolCallRequested): ToolCallRequest {
  return {
    callId: request.toolCallId,
    idempotencyKey: request.idempotencyKey,
    tool: request.toolName,
    arguments: request.arguments,
    userId: request.userId,
    accounts: request.accounts,
    sessionId: request.sessionId,
    conversationId: request.conversationId,
    correlationId: request.correlationId,
    role: request.role,
    flowState: request.flowState,
  };
}

/** A result's effects as the wire carries them: a handoff from a worker's tool is always the tool's own (`ctx.handoff`). */
function wireEffects(effects: ToolEffects): ToolCallCompleted['effects'] {
  const { handoff, ...rest } = effects;
  return handoff === undefined ? rest : { ...rest, handoff: { reason: handoff.reason, source: 'tool' } };
}
