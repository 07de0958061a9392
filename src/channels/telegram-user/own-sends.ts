import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ChannelStateStore } from '../../domain/ports/channel.js';

/** One part the channel is about to send or sent, kept until Telegram gave it an id. */
const PendingSendSchema = z.object({
  /** The outbox part's delivery key. */
  key: z.string(),
  /** SHA-256 of the text as Telegram shows it (trimmed), base64url, so the state holds no message text. */
  hashes: z.array(z.string()).readonly(),
  /** Epoch ms of the last attempt. */
  at: z.number(),
});
type PendingSend = z.infer<typeof PendingSendSchema>;

export interface OwnSendsOptions {
  readonly state: ChannelStateStore;
  /** Epoch milliseconds. Default `Date.now`. */
  readonly now?: () => number;
  /** Message ids remembered per process. Default 5000. */
  readonly maxIds?: number;
  /** A pending send older than this no longer matches (its part failed for good, or was sent long ago). Default 24 h. */
  readonly pendingTtlMs?: number;
}

const STATE_PREFIX = 'own-sends:';

/**
 * Tells the account's own replies from messages its owner typed by hand. Both arrive as outgoing messages: Telegram
 * echoes a sent message to every session when the send's answer was lost (a reconnect) or the process died between
 * sending and storing the message id. The outbox's record is out of the channel's reach, so the channel keeps its
 * own: before each send attempt the part's text (hashed) is written to the channel state, keyed by chat; once
 * Telegram answers, the message id joins an in-memory set and the pending entry goes. An outgoing message is ours
 * when its id is in the set, or when its chat has a pending send with the same text (the crash case, and an echo
 * that overtakes the send's answer).
 */
export class OwnSends {
  readonly #state: ChannelStateStore;
  readonly #now: () => number;
  readonly #maxIds: number;
  readonly #ttlMs: number;
  /** `chat:message` ids this process sent, oldest first. */
  readonly #ids = new Set<string>();
  /** One chat's state updates at a time (read, change, write). */
  readonly #chains = new Map<string, Promise<unknown>>();

  constructor(options: OwnSendsOptions) {
    this.#state = options.state;
    this.#now = options.now ?? Date.now;
    this.#maxIds = options.maxIds ?? 5_000;
    this.#ttlMs = options.pendingTtlMs ?? 24 * 60 * 60 * 1000;
  }

  /**
   * Before an attempt to send a part: `text` is exactly what Telegram will show (the formatter's plain text, or the
   * fallback text on a retry without entities). Awaited before the send, so a crash after it cannot lose it.
   */
  willSend(chatId: string, deliveryKey: string, text: string): Promise<void> {
    const hash = hashOf(text);
    return this.#update(chatId, (pending) => {
      const existing = pending.find((p) => p.key === deliveryKey);
      const hashes = existing ? [...new Set([...existing.hashes, hash])] : [hash];
      return [...pending.filter((p) => p.key !== deliveryKey), { key: deliveryKey, hashes, at: this.#now() }];
    });
  }

  /** Telegram took the part and gave it `messageId`. */
  sent(chatId: string, deliveryKey: string, messageId: number | string): Promise<void> {
    this.#remember(chatId, messageId);
    return this.#update(chatId, (pending) => pending.filter((p) => p.key !== deliveryKey));
  }

  /**
   * Whether an outgoing message in `chatId` is one this channel sent. A pending send it matches by text is settled
   * by it (its id remembered), so a second, hand-typed message with the same text counts as the owner's.
   */
  async isOwn(chatId: string, messageId: number | string, text: string): Promise<boolean> {
    if (this.#ids.has(idOf(chatId, messageId))) return true;
    const hash = hashOf(text);
    let matched = false;
    await this.#update(chatId, (pending) => {
      const match = pending.find((p) => p.hashes.includes(hash));
      if (!match) return pending;
      matched = true;
      return pending.filter((p) => p !== match);
    });
    if (matched) this.#remember(chatId, messageId);
    return matched;
  }

  #remember(chatId: string, messageId: number | string): void {
    const id = idOf(chatId, messageId);
    this.#ids.delete(id);
    this.#ids.add(id);
    for (const oldest of this.#ids) {
      if (this.#ids.size <= this.#maxIds) break;
      this.#ids.delete(oldest);
    }
  }

  /** Reads a chat's pending sends (expired ones dropped), applies `change`, writes back what changed. */
  #update(chatId: string, change: (pending: readonly PendingSend[]) => readonly PendingSend[]): Promise<void> {
    const key = `${STATE_PREFIX}${chatId}`;
    const run = async (): Promise<void> => {
      const stored = parsePending(await this.#state.get(key));
      const fresh = stored.filter((p) => this.#now() - p.at < this.#ttlMs);
      const next = change(fresh);
      if (next.length === stored.length && next.every((p, i) => p === stored[i])) return;
      if (next.length === 0) await this.#state.delete(key);
      else await this.#state.set(key, JSON.stringify(next));
    };
    const previous = this.#chains.get(chatId) ?? Promise.resolve();
    const current = previous.then(run, run);
    this.#chains.set(chatId, current);
    void current.finally(() => {
      if (this.#chains.get(chatId) === current) this.#chains.delete(chatId);
    }).catch(() => undefined);
    return current;
  }
}

function idOf(chatId: string, messageId: number | string): string {
  return `${chatId}:${messageId}`;
}

function hashOf(text: string): string {
  return createHash('sha256').update(text.trim()).digest('base64url');
}

/** The stored list, or none when the value is missing or not what this class wrote. */
function parsePending(value: string | undefined): PendingSend[] {
  if (value === undefined) return [];
  try {
    const parsed = z.array(PendingSendSchema).safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}
