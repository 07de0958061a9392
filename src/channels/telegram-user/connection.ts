import type { ConnectionState, Message, TelegramClient, User } from '@mtcute/node';
import { silentLogger, type Logger } from '../../observability/logger.js';
import { whenCaughtUp } from './catch-up.js';
import { SIGNED_OUT_ERRORS, type BuiltClient } from './client-factory.js';

/** What `/health` and the `palaver_telegram_user_connection` gauge report. */
export type ConnectionHealth = 'connected' | 'reconnecting' | 'signed_out';

export const CONNECTION_HEALTH_STATES: readonly ConnectionHealth[] = ['connected', 'reconnecting', 'signed_out'];

export interface TelegramUserConnectionOptions {
  /** Builds a fresh client (the first, and each one after a client had to be given up). */
  readonly build: (hooks: { readonly onSignedOut: (error: string) => void }) => BuiltClient;
  /**
   * Handles one new message (incoming, or the owner's own from another device). mtcute saves the update state only
   * after the handler resolved, so a message is acknowledged only once this stored it.
   */
  readonly onMessage: (message: Message, self: User) => Promise<void>;
  /** Each change of health (and the first). `detail` says why for `reconnecting` and `signed_out`. */
  readonly onHealth?: (health: ConnectionHealth, detail?: string) => void;
  readonly logger?: Logger;
  /** First wait before building a new client after a failed connect; doubles up to `maxDelayMs`. Default 1000. */
  readonly initialDelayMs?: number;
  /** Default 60 000. */
  readonly maxDelayMs?: number;
  /** A client that has not reconnected by itself within this many ms after a drop is replaced. Default 60 000. */
  readonly stallTimeoutMs?: number;
}

/**
 * The MTProto connection of the user-account channel: connect, `getMe`, the updates loop, and catch-up
 * (`updates.getDifference`) at start and after every reconnect, which mtcute does not do by itself after a drop.
 * mtcute reconnects its socket on its own; a client that stays down past `stallTimeoutMs`, or fails to start, is
 * destroyed and a new one built after a backoff. A session Telegram ended (AUTH_KEY_UNREGISTERED, SESSION_REVOKED,
 * USER_DEACTIVATED…) stops the connection for good: health `signed_out`, until someone signs in again.
 */
export class TelegramUserConnection {
  readonly #options: TelegramUserConnectionOptions;
  readonly #logger: Logger;
  #built: BuiltClient | undefined;
  #self: User | undefined;
  #health: ConnectionHealth = 'reconnecting';
  #healthDetail: string | undefined = 'starting';
  #stopped = true;
  #delayMs: number;
  #retryTimer: NodeJS.Timeout | undefined;
  #stallTimer: NodeJS.Timeout | undefined;
  /** The client's last state: catch-up is forced on the way back from a drop, not after each of its own catch-ups. */
  #lastState: ConnectionState | undefined;

  constructor(options: TelegramUserConnectionOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger();
    this.#delayMs = options.initialDelayMs ?? 1_000;
  }

  get health(): ConnectionHealth {
    return this.#health;
  }

  get healthDetail(): string | undefined {
    return this.#healthDetail;
  }

  /** The account, once `getMe` answered. */
  get self(): User | undefined {
    return this.#self;
  }

  /** The current client. @throws Error when there is none (not started, stopped, or signed out). */
  get client(): TelegramClient {
    if (!this.#built) throw new Error('the Telegram user-account client is not running');
    return this.#built.client;
  }

  /**
   * Connects and starts receiving. Resolves after the first attempt: connected, signed out (health tells), or failed
   * for another reason (then attempts go on in the background with backoff).
   */
  async start(): Promise<void> {
    if (!this.#stopped) throw new Error('TelegramUserConnection.start was called twice; stop it first');
    this.#stopped = false;
    this.#setHealth('reconnecting', 'starting');
    await this.#open();
  }

  /** Disconnects for good. Safe to call twice. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#clearTimers();
    const built = this.#built;
    this.#built = undefined;
    await built?.destroy();
  }

  /** Asks Telegram for everything since the saved update state (`updates.getDifference`). */
  catchUp(): void {
    this.#built?.client.handleClientUpdate({ _: 'updatesTooLong' }, false);
  }

  /** Telegram said the session is gone: stop for good (called by the client's middleware, or for an error seen). */
  signedOut(error: string): void {
    if (this.#health === 'signed_out') return;
    this.#logger.error(
      { telegramError: error },
      `Telegram ended the user account's session (${error}): the telegram-user channel has stopped (other channels go on). Sign in again with \`palaver telegram login\`, then restart.`,
    );
    this.#setHealth('signed_out', error);
    this.#clearTimers();
    const built = this.#built;
    this.#built = undefined;
    // Not awaited: this runs inside the client's own call chain, which destroy would wait on.
    void built?.destroy().catch((err: unknown) => this.#logger.warn({ err }, 'destroying the signed-out client failed'));
  }

  async #open(): Promise<void> {
    if (this.#stopped || this.#health === 'signed_out') return;
    let built: BuiltClient;
    try {
      built = this.#options.build({ onSignedOut: (error) => this.signedOut(error) });
    } catch (error) {
      this.#logger.error({ err: error }, 'could not build the Telegram user-account client');
      return this.#retryLater(error);
    }
    this.#built = built;
    this.#lastState = undefined;
    const { client } = built;
    client.onError.add((err) => this.#logger.warn({ err }, 'telegram user-account client error'));
    client.onConnectionState.add((state) => this.#onState(built, state));
    client.onNewMessage.add(async (message) => {
      const self = this.#self;
      if (!self || this.#built !== built) return;
      await this.#options.onMessage(message, self);
    });
    try {
      await client.connect();
      this.#self = await client.getMe();
      const caughtUp = whenCaughtUp(client, 30_000);
      await client.startUpdatesLoop();
      // Messages that came while Palaver was down: mtcute catches up at start, this makes sure of it.
      this.catchUp();
      // Until the first catch-up is done the client does not know which update state it counts from.
      await caughtUp;
      if (this.#built !== built) return;
      this.#delayMs = this.#options.initialDelayMs ?? 1_000;
      this.#setHealth('connected');
    } catch (error) {
      const text = rpcErrorText(error);
      if (text !== undefined && SIGNED_OUT_ERRORS.has(text)) return this.signedOut(text);
      if (this.#isSignedOut() || this.#stopped) return;
      this.#logger.warn({ err: error }, 'could not connect the Telegram user account; trying again');
      return this.#retryLater(error);
    }
  }

  #onState(built: BuiltClient, state: ConnectionState): void {
    if (this.#built !== built || this.#stopped || this.#health === 'signed_out') return;
    const previous = this.#lastState;
    this.#lastState = state;
    if (state === 'offline' || state === 'connecting') {
      if (this.#health === 'connected') {
        this.#logger.warn({ state }, 'telegram user-account connection lost; reconnecting');
        this.#setHealth('reconnecting', 'connection lost');
        this.#watchStall(built);
      }
      return;
    }
    if (state === 'connected' && (previous === 'offline' || previous === 'connecting') && this.#self) {
      clearTimeout(this.#stallTimer);
      // mtcute does not catch up after a reconnect: without this, what arrived during the drop waits for the next push.
      this.catchUp();
      if (this.#health === 'reconnecting') {
        this.#logger.info('telegram user-account connection back; catching up');
        this.#setHealth('connected');
      }
    }
  }

  #watchStall(built: BuiltClient): void {
    clearTimeout(this.#stallTimer);
    this.#stallTimer = setTimeout(() => {
      if (this.#built !== built || this.#health !== 'reconnecting' || this.#stopped) return;
      this.#logger.warn('telegram user-account client did not reconnect; building a new one');
      void this.#replace(built);
    }, this.#options.stallTimeoutMs ?? 60_000);
    this.#stallTimer.unref();
  }

  async #replace(built: BuiltClient): Promise<void> {
    this.#built = undefined;
    await built.destroy().catch((err: unknown) => this.#logger.warn({ err }, 'destroying the stalled client failed'));
    this.#retryLater(new Error('stalled'));
  }

  #retryLater(error: unknown): void {
    if (this.#stopped || this.#health === 'signed_out') return;
    const failed = this.#built;
    this.#built = undefined;
    void failed?.destroy().catch(() => {});
    this.#setHealth('reconnecting', error instanceof Error ? error.message : String(error));
    const delay = this.#delayMs;
    this.#delayMs = Math.min(this.#delayMs * 2, this.#options.maxDelayMs ?? 60_000);
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => void this.#open(), delay);
    this.#retryTimer.unref();
  }

  #setHealth(health: ConnectionHealth, detail?: string): void {
    const changed = health !== this.#health || detail !== this.#healthDetail;
    this.#health = health;
    this.#healthDetail = detail;
    if (changed || health === 'reconnecting') this.#options.onHealth?.(health, detail);
  }

  #isSignedOut(): boolean {
    return this.#health === 'signed_out';
  }

  #clearTimers(): void {
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#stallTimer);
  }
}

/** The RPC error text of an mtcute error (`tl.RpcError.text`), if it is one. */
export function rpcErrorText(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const text = (error as { text?: unknown }).text;
  return typeof text === 'string' ? text : undefined;
}
