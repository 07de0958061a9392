import { z } from 'zod';
import type { ChannelStateStore } from '../../domain/ports/channel.js';
import { silentLogger, type Logger } from '../../observability/logger.js';

/** Default of `channels.telegramUser.ownerTakeoverMinutes`. */
export const DEFAULT_OWNER_TAKEOVER_MINUTES = 30;

const STATE_KEY = 'owner-takeovers';
/** chat id → epoch ms until which the agent stays quiet there. */
const StoredTakeoversSchema = z.record(z.string(), z.number());

export interface OwnerTakeoverOptions {
  readonly state: ChannelStateStore;
  /** How long the agent steps back after the owner's last message in a chat, in ms; 0 turns stepping back off. */
  readonly windowMs: number;
  /** Epoch milliseconds. Default `Date.now`. */
  readonly now?: () => number;
  readonly logger?: Logger;
  /** Called once for each takeover that starts (a message that extends a running one does not count). */
  readonly onTakeover?: () => void;
}

/**
 * The chats the account's owner has taken over by writing in them by hand: there the agent answers nothing until
 * `windowMs` after the owner's last message. Kept in the channel's state, so a restart inside the window does not
 * make the agent barge in; expired entries are dropped when the state is next written.
 */
export class OwnerTakeover {
  readonly #options: OwnerTakeoverOptions;
  readonly #now: () => number;
  readonly #logger: Logger;
  readonly #until: Map<string, number>;
  #writes: Promise<void> = Promise.resolve();

  private constructor(options: OwnerTakeoverOptions, until: Map<string, number>) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger ?? silentLogger();
    this.#until = until;
  }

  /** Reads the takeovers still running from the channel's state (a stored value it cannot read counts as none). */
  static async load(options: OwnerTakeoverOptions): Promise<OwnerTakeover> {
    const raw = await options.state.get(STATE_KEY);
    let stored: Record<string, number> = {};
    if (raw !== undefined) {
      try {
        stored = StoredTakeoversSchema.parse(JSON.parse(raw));
      } catch {
        (options.logger ?? silentLogger()).warn('the stored owner takeovers could not be read; starting with none');
      }
    }
    const now = (options.now ?? Date.now)();
    return new OwnerTakeover(options, new Map(Object.entries(stored).filter(([, until]) => until > now)));
  }

  /**
   * The owner wrote in `chatId` at `at`: the agent steps back there until `at` + the window (from now at the latest,
   * so a message caught up after downtime counts from when it was written). Stored before it resolves.
   * @returns until when, and whether this started a takeover (rather than extending one).
   */
  async ownerWrote(chatId: string, at: Date): Promise<{ readonly until: Date; readonly started: boolean }> {
    const now = this.#now();
    const until = Math.min(at.getTime(), now) + this.#options.windowMs;
    const current = this.#until.get(chatId);
    const running = current !== undefined && current > now;
    if (until <= now || (running && current >= until)) return { until: new Date(Math.max(until, current ?? 0)), started: false };
    this.#until.set(chatId, until);
    await this.#persist();
    if (!running) {
      this.#options.onTakeover?.();
      this.#logger.info({ chatId, until: new Date(until).toISOString() }, 'the account owner wrote in this chat by hand; the agent steps back there');
    }
    return { until: new Date(until), started: !running };
  }

  /** Until when the agent stays quiet in `chatId`; undefined when it answers there. */
  heldUntil(chatId: string): Date | undefined {
    const until = this.#until.get(chatId);
    if (until === undefined) return undefined;
    if (until > this.#now()) return new Date(until);
    this.#until.delete(chatId);
    this.#logger.info({ chatId }, 'owner takeover over; the agent answers this chat again');
    return undefined;
  }

  /** How many chats are taken over right now (the gauge). */
  activeCount(): number {
    const now = this.#now();
    let count = 0;
    for (const until of this.#until.values()) if (until > now) count += 1;
    return count;
  }

  /** Writes the running takeovers, one write at a time, in order. */
  #persist(): Promise<void> {
    const write = async (): Promise<void> => {
      const now = this.#now();
      const running = Object.fromEntries([...this.#until].filter(([, until]) => until > now));
      await this.#options.state.set(STATE_KEY, JSON.stringify(running));
    };
    this.#writes = this.#writes.then(write, write);
    return this.#writes;
  }
}
