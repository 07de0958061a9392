import { createConcurrentSink, createRunner, createSource, type RunnerHandle, type UpdateSupplier } from '@grammyjs/runner';
import { GrammyError, type Api } from 'grammy';
import type { Update } from 'grammy/types';
import { ChannelError } from '../../domain/errors.js';
import type { ChannelStateStore } from '../../domain/ports/channel.js';
import type { Logger } from '../../observability/logger.js';
import { TELEGRAM_BOT_CHANNEL } from './address.js';

/** The runner's (and grammY's) AbortSignal type, from their shim. */
type PollSignal = Parameters<UpdateSupplier<Update>['supply']>[1];

export interface DurablePollerOptions {
  readonly api: Api;
  readonly state: ChannelStateStore;
  /** The state key of the offset; per bot, so a new token does not start from another bot's offset. */
  readonly offsetKey: string;
  /** Stores one update (accept, or tell the person why not). Rejects when it could not be stored: it is retried. */
  readonly handle: (update: Update) => Promise<void>;
  /**
   * Keeps an update whose handling failed `maxAttempts` times (a dead letter); polling then goes on past it. Rejects
   * when it could not keep it either (the database is down): then the update is retried, never skipped unkept.
   */
  readonly giveUp: (update: Update, failure: { readonly error: unknown; readonly attempts: number }) => Promise<void>;
  /** Attempts at handling one update before it is given up. Default 3. */
  readonly maxAttempts?: number;
  /** The wait before the second attempt, doubled for each further one (at most 30 s). Default 500 ms. */
  readonly retryDelayMs?: number;
  readonly allowedUpdates: readonly Exclude<keyof Update, 'update_id'>[];
  readonly logger: Logger;
  /** Long-poll timeout in seconds. Default 30. */
  readonly timeoutSeconds?: number;
  /** Called once when polling ended by itself (409 Conflict, a revoked token); the channel keeps delivering. */
  readonly onFatal: (error: ChannelError) => void;
  /**
   * With several processes on one database: the polling lease, confirmed before each getUpdates and before each
   * offset saved. Once it is not (this process stalled past it and another polls now), polling stops at once and
   * `onLeaseLost` is called instead of `onFatal`.
   */
  readonly lease?: { confirm(): Promise<boolean> };
  readonly onLeaseLost?: () => void;
}

/** Polling stopped because this process no longer holds the polling lease. */
export class PollingLeaseLostError extends Error {
  override readonly name = 'PollingLeaseLostError';
  constructor() {
    super('This process no longer holds the Telegram polling lease: another one polls now.');
  }
}

/** Conflicts in a row (getUpdates answered 409) tolerated while this process holds the polling lease. */
const CONFLICTS_WHILE_LEASED = 5;

/**
 * Long polling through @grammyjs/runner with the offset kept in the channel's state, so that a restart neither
 * repeats nor skips updates.
 *
 * Telegram forgets every update below the offset of the next `getUpdates`. So the source asks for the next batch
 * only once each update of the previous one was handled (stored by `accept`, or refused and told) and the new
 * offset is saved: an update is acknowledged only after it is stored. Within a batch, updates are handled at once
 * (the runner's concurrent sink; the channel orders each chat's updates itself). An update that could not be stored
 * is retried with backoff; if polling stops meanwhile, the offset stays before it and the next start fetches it.
 * After `maxAttempts` failures it is handed to `giveUp` (kept as a dead letter) and the offset moves past it, so one
 * update that always fails (a bug, a shape nobody foresaw) cannot stall every later one.
 *
 * A 409 Conflict (another process polls this token, or a webhook is set) ends polling with a clear error instead of
 * fighting for updates; so does a 401 (the token was revoked).
 */
export class DurablePoller {
  readonly #options: DurablePollerOptions;
  #offset = 0;
  #runner: RunnerHandle | undefined;
  #stopping = new AbortController();
  /** Outcomes of the batch handed out last, by update id: true once stored, false when given up (stopping). */
  #batch: { readonly id: number; readonly done: Promise<boolean> }[] = [];
  readonly #settle = new Map<number, (stored: boolean) => void>();
  #first: Update[] | undefined;

  constructor(options: DurablePollerOptions) {
    this.#options = options;
  }

  /**
   * Reads the stored offset and polls once without waiting, so that a conflict refuses the start.
   * @throws ChannelError `conflict` (409) or `unauthorized` (401).
   */
  async start(): Promise<void> {
    // The offset the previous poller (maybe another process) saved: Telegram forgets the updates below it only when
    // this poller's first getUpdates confirms it, and an update fetched twice is deduped by the inbox.
    const stored = await this.#options.state.get(this.#options.offsetKey);
    this.#offset = stored === undefined ? 0 : Number(stored);
    try {
      await this.#confirmLease();
      this.#first = await this.#options.api.getUpdates({ offset: this.#offset, limit: 100, timeout: 0, allowed_updates: this.#options.allowedUpdates });
    } catch (error) {
      throw fatalError(error) ?? error;
    }
    const supplier: UpdateSupplier<Update> = { supply: (batchSize, signal) => this.#supply(batchSize, signal) };
    const sink = createConcurrentSink<Update>(
      { consume: (update) => this.#consume(update) },
      async (error) => this.#options.logger.error({ err: error }, 'telegram update handler failed'),
      { concurrency: 100 },
    );
    this.#runner = createRunner(createSource(supplier), sink);
    this.#runner.start();
    this.#runner.task()?.catch((error: unknown) => {
      if (error instanceof PollingLeaseLostError) return this.#options.onLeaseLost?.();
      const fatal = fatalError(error);
      if (fatal) this.#options.onFatal(fatal);
      else this.#options.logger.error({ err: error }, 'telegram polling stopped on an unexpected error');
    });
  }

  /** Stops fetching; updates being stored finish or are left for the next start. Safe to call twice. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    const runner = this.#runner;
    this.#runner = undefined;
    if (runner?.isRunning()) await runner.stop()?.catch(() => {});
    await Promise.allSettled(this.#batch.map((entry) => entry.done));
  }

  get isPolling(): boolean {
    return this.#runner?.isRunning() ?? false;
  }

  async #supply(batchSize: number, signal: PollSignal): Promise<Update[]> {
    await this.#commitBatch();
    let updates: Update[];
    if (this.#first) {
      updates = this.#first;
      this.#first = undefined;
    } else {
      updates = await this.#fetch(batchSize, signal);
    }
    this.#batch = updates.map((update) => ({
      id: update.update_id,
      done: new Promise<boolean>((resolve) => this.#settle.set(update.update_id, resolve)),
    }));
    return updates;
  }

  /** Waits for the last batch, then saves the offset past every update of it that was stored, in order. */
  async #commitBatch(): Promise<void> {
    let next = this.#offset;
    for (const entry of this.#batch) {
      if (!(await entry.done)) break;
      next = entry.id + 1;
    }
    this.#batch = [];
    if (next !== this.#offset) {
      this.#offset = next;
      // A poller that lost the lease leaves the offset to the one that has it (whose offset may be further on).
      await this.#confirmLease();
      await this.#options.state.set(this.#options.offsetKey, String(next));
    }
  }

  /** @throws PollingLeaseLostError when this process no longer holds the polling lease. */
  async #confirmLease(): Promise<void> {
    if (this.#options.lease && !(await this.#options.lease.confirm())) throw new PollingLeaseLostError();
  }

  async #fetch(batchSize: number, signal: PollSignal): Promise<Update[]> {
    let delayMs = 500;
    let conflicts = 0;
    for (;;) {
      try {
        await this.#confirmLease();
        return await this.#options.api.getUpdates(
          {
            offset: this.#offset,
            limit: Math.max(1, Math.min(100, batchSize)),
            timeout: this.#options.timeoutSeconds ?? 30,
            allowed_updates: this.#options.allowedUpdates,
          },
          signal,
        );
      } catch (error) {
        if (signal.aborted || error instanceof PollingLeaseLostError) throw error;
        const fatal = fatalError(error);
        // Holding the lease, a 409 comes from a poller that lost it and whose last getUpdates was still on its way
        // (it stops once that returns): wait, then poll again. Only a conflict that lasts is another bot's.
        const stalePoller =
          fatal?.code === 'conflict' && this.#options.lease !== undefined && !/webhook/i.test(fatal.message) && ++conflicts < CONFLICTS_WHILE_LEASED;
        if (fatal && !stalePoller) throw error;
        this.#options.logger.warn({ err: error, retryInMs: delayMs }, 'telegram getUpdates failed; retrying');
        await sleep(delayMs, signal as unknown as AbortSignal);
        delayMs = Math.min(30_000, delayMs * 2);
      }
    }
  }

  /**
   * Hands one update to the channel until it is stored, or kept as a dead letter after `maxAttempts` failures; left
   * for the next start only when polling stops first.
   */
  async #consume(update: Update): Promise<void> {
    const settle = this.#settle.get(update.update_id);
    this.#settle.delete(update.update_id);
    const maxAttempts = this.#options.maxAttempts ?? 3;
    let delayMs = this.#options.retryDelayMs ?? 500;
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          await this.#options.handle(update);
          settle?.(true);
          return;
        } catch (error) {
          if (this.#stopping.signal.aborted) {
            this.#options.logger.warn(
              { err: error, updateId: update.update_id },
              'telegram update not stored before stop; it is fetched again at the next start',
            );
            settle?.(false);
            return;
          }
          if (attempt >= maxAttempts && (await this.#giveUp(update, error, attempt))) {
            settle?.(true);
            return;
          }
          this.#options.logger.error({ err: error, updateId: update.update_id, attempt, retryInMs: delayMs }, 'telegram update could not be stored; retrying');
          await sleep(delayMs, this.#stopping.signal).catch(() => {});
          delayMs = Math.min(30_000, delayMs * 2);
        }
      }
    } finally {
      settle?.(false);
    }
  }

  /** True once the update is kept as a dead letter; false when even that failed (it is then tried again). */
  async #giveUp(update: Update, error: unknown, attempts: number): Promise<boolean> {
    try {
      await this.#options.giveUp(update, { error, attempts });
      return true;
    } catch (keepError) {
      this.#options.logger.error({ err: keepError, updateId: update.update_id }, 'telegram update could not be kept as a dead letter either; retrying');
      return false;
    }
  }
}

/** The error that must end polling (409 Conflict, 401 Unauthorized) as a ChannelError saying what to do; else undefined. */
export function fatalError(error: unknown): ChannelError | undefined {
  if (!(error instanceof GrammyError)) return undefined;
  if (error.error_code === 409) {
    const webhook = /webhook/i.test(error.description);
    return new ChannelError(
      'conflict',
      TELEGRAM_BOT_CHANNEL,
      webhook
        ? `Telegram refuses long polling while a webhook is set for this bot (409: ${error.description}). Use mode "webhook", or delete the webhook (Palaver does at start in polling mode; another process may have set it again).`
        : `Another process is polling Telegram with this bot token (409: ${error.description}). Only one poller per token may run: stop the other Palaver (or bot) using this token, or give this one its own bot.`,
      { cause: error },
    );
  }
  if (error.error_code === 401 || error.error_code === 404) {
    return new ChannelError(
      'unauthorized',
      TELEGRAM_BOT_CHANNEL,
      `Telegram refused the bot token (${error.error_code}: ${error.description}); check TELEGRAM_BOT_TOKEN with @BotFather.`,
      { cause: error },
    );
  }
  return undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error('aborted'));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
