import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ChannelStateStore } from '../../domain/ports/channel.js';

/** One part the channel sent or is about to send, as kept in the channel state per chat. */
const OwnSendSchema = z.object({
  /** The outbox part's delivery key. */
  key: z.string(),
  /** SHA-256 (base64url) of each text an attempt sent, as Telegram shows it (trimmed): the state holds no message text. */
  hashes: z.array(z.string()).readonly(),
  /** The message id Telegram gave it, once known. */
  id: z.number().optional(),
  /** Epoch ms of the last change. */
  at: z.number(),
});
type OwnSend = z.infer<typeof OwnSendSchema>;

export interface OwnSendsOptions {
  readonly state: ChannelStateStore;
  /** Epoch milliseconds. Default `Date.now`. */
  readonly now?: () => number;
  /** Message ids remembered in memory. Default 5000. */
  readonly maxIds?: number;
  /** Parts kept per chat in the state, newest last. Default 100. */
  readonly maxPerChat?: number;
  /** A part Telegram never gave an id (it failed for good) stops matching after this long. Default 7 days. */
  readonly pendingTtlMs?: number;
}

const STATE_PREFIX = 'own-sends:';

/**
 * Tells the account's own replies from messages its owner typed by hand. Both arrive as outgoing messages: Telegram
 * echoes a sent message when the send's answer was lost (a reconnect), and catch-up after a crash replays what was
 * sent since the update state was last saved. The outbox is out of the channel's reach (ChannelContext has no
 * lookup), so the channel keeps its own record in the channel state, per chat: before each send attempt the part's
 * text (hashed), and once Telegram answers, the message id. An outgoing message is ours when its id is recorded, or
 * when a part of its chat still waiting for an id has its text (the echo of a part sent just before a crash, or one
 * that overtakes the send's answer). The last `maxPerChat` parts of each chat are kept, so a replay after a long
 * downtime is still recognised.
 */
export class OwnSends {
  readonly #state: ChannelStateStore;
  readonly #now: () => number;
  readonly #maxIds: number;
  readonly #maxPerChat: number;
  readonly #ttlMs: number;
  /** `chat:message` ids known to be ours, oldest first: spares a state read for the common case. */
  readonly #ids = new Set<string>();
  /** One chat's state updates at a time (read, change, write). */
  readonly #chains = new Map<string, Promise<unknown>>();

  constructor(options: OwnSendsOptions) {
    this.#state = options.state;
    this.#now = options.now ?? Date.now;
    this.#maxIds = options.maxIds ?? 5_000;
    this.#maxPerChat = options.maxPerChat ?? 100;
    this.#ttlMs = options.pendingTtlMs ?? 7 * 24 * 60 * 60 * 1000;
  }

  /**
   * Before an attempt to send a part: `text` is exactly what Telegram will show (the formatter's plain text, or the
   * fallback text on a retry without entities). Awaited before the send, so a crash after it cannot lose it.
   */
  willSend(chatId: string, deliveryKey: string, text: string): Promise<void> {
    const hash = hashOf(text);
    return this.#update(chatId, (sends) => {
      const existing = sends.find((s) => s.key === deliveryKey);
      const hashes = existing ? [...new Set([...existing.hashes, hash])] : [hash];
      const entry: OwnSend = { ...existing, key: deliveryKey, hashes, at: this.#now() };
      return [...sends.filter((s) => s !== existing), entry];
    });
  }

  /** Telegram took the part and gave it `messageId`. */
  sent(chatId: string, deliveryKey: string, messageId: number): Promise<void> {
    this.#remember(chatId, messageId);
    return this.#update(chatId, (sends) => {
      const existing = sends.find((s) => s.key === deliveryKey);
      if (existing?.id === messageId) return sends;
      const entry: OwnSend = { key: deliveryKey, hashes: existing?.hashes ?? [], id: messageId, at: this.#now() };
      return [...sends.filter((s) => s !== existing), entry];
    });
  }

  /**
   * Whether an outgoing message in `chatId` is one this channel sent. A part waiting for its id that matches by text
   * takes this message's id, so a second, hand-typed message with the same text counts as the owner's.
   */
  async isOwn(chatId: string, messageId: number, text: string): Promise<boolean> {
    if (this.#ids.has(idOf(chatId, messageId))) return true;
    const hash = hashOf(text);
    let own = false;
    await this.#update(chatId, (sends) => {
      if (sends.some((s) => s.id === messageId)) {
        own = true;
        return sends;
      }
      const waiting = sends.find((s) => s.id === undefined && s.hashes.includes(hash));
      if (!waiting) return sends;
      own = true;
      return sends.map((s) => (s === waiting ? { ...s, id: messageId, at: this.#now() } : s));
    });
    if (own) this.#remember(chatId, messageId);
    return own;
  }

  #remember(chatId: string, messageId: number): void {
    const id = idOf(chatId, messageId);
    this.#ids.delete(id);
    this.#ids.add(id);
    for (const oldest of this.#ids) {
      if (this.#ids.size <= this.#maxIds) break;
      this.#ids.delete(oldest);
    }
  }

  /** Reads a chat's parts (long-failed and surplus ones dropped), applies `change`, writes back what changed. */
  #update(chatId: string, change: (sends: readonly OwnSend[]) => readonly OwnSend[]): Promise<void> {
    const key = `${STATE_PREFIX}${chatId}`;
    const run = async (): Promise<void> => {
      const stored = parseSends(await this.#state.get(key));
      const now = this.#now();
      const kept = stored.filter((s) => s.id !== undefined || now - s.at < this.#ttlMs);
      const next = change(kept).slice(-this.#maxPerChat);
      if (next.length === stored.length && next.every((s, i) => s === stored[i])) return;
      if (next.length === 0) await this.#state.delete(key);
      else await this.#state.set(key, JSON.stringify(next));
    };
    const previous = this.#chains.get(chatId) ?? Promise.resolve();
    const current = previous.then(run, run);
    this.#chains.set(chatId, current);
    void current
      .finally(() => {
        if (this.#chains.get(chatId) === current) this.#chains.delete(chatId);
      })
      .catch(() => undefined);
    return current;
  }
}

function idOf(chatId: string, messageId: number): string {
  return `${chatId}:${messageId}`;
}

function hashOf(text: string): string {
  return createHash('sha256').update(text.trim()).digest('base64url');
}

/** The stored list, or none when the value is missing or not what this class wrote. */
function parseSends(value: string | undefined): OwnSend[] {
  if (value === undefined) return [];
  try {
    const parsed = z.array(OwnSendSchema).safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}
