import type * as PromClient from 'prom-client';

/** The Telegram user-account channel's metrics (`palaver_telegram_user_*`), on every Palaver's registry. */
export class TelegramUserMetrics {
  /** The account's connection: 1 for its current state (connected, reconnecting, signed_out), 0 for the others. */
  readonly connection: PromClient.Gauge<'state'>;
  /** Times Telegram ended the account's session (AUTH_KEY_UNREGISTERED, SESSION_REVOKED…), by error. */
  readonly signedOut: PromClient.Counter<'error'>;
  /** Chats the account's owner took over by writing by hand (each start of a takeover). */
  readonly ownerTakeovers: PromClient.Counter<string>;
  /** Chats taken over right now, read from the sources `watchTakenOverChats` adds. */
  readonly takenOverChats: PromClient.Gauge<string>;
  readonly #takenOverSources = new Set<() => number>();

  constructor(prom: typeof PromClient, registry: PromClient.Registry) {
    this.connection = new prom.Gauge({
      name: 'palaver_telegram_user_connection',
      help: 'Telegram user account connection: 1 for the current state (connected, reconnecting, signed_out)',
      labelNames: ['state'] as const,
      registers: [registry],
    });
    this.signedOut = new prom.Counter({
      name: 'palaver_telegram_user_signed_out_total',
      help: 'Times Telegram ended the user account session (the channel stopped), by error',
      labelNames: ['error'] as const,
      registers: [registry],
    });
    this.ownerTakeovers = new prom.Counter({
      name: 'palaver_telegram_user_owner_takeovers_total',
      help: 'Telegram user-account chats the owner took over by writing by hand (the agent steps back there)',
      registers: [registry],
    });
    const takenOverSources = this.#takenOverSources;
    this.takenOverChats = new prom.Gauge({
      name: 'palaver_telegram_user_taken_over_chats',
      help: 'Telegram user-account chats the owner has taken over right now (the agent answers nothing there)',
      registers: [registry],
      collect() {
        let total = 0;
        for (const source of takenOverSources) total += source();
        this.set(total);
      },
    });
  }

  /** Adds a count of taken-over chats to the gauge (a running channel's); the returned function removes it. */
  watchTakenOverChats(source: () => number): () => void {
    this.#takenOverSources.add(source);
    return () => this.#takenOverSources.delete(source);
  }
}
