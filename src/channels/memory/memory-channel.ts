import type {
  Acceptance,
  Channel,
  ChannelCapabilities,
  ChannelContext,
  RecordedConversation,
  RecordedMessage,
  ReplyTarget,
  SentPart,
  TurnEnd,
  TurnOutcome,
  TurnProgress,
} from '../../domain/ports/channel.js';

export interface MemoryChannelOptions {
  /** Channel name the messages carry (default `memory`). */
  readonly name?: string;
  /** Whose account ids these are, for identity (`Channel.accountNamespace`); default the channel's name. */
  readonly accountNamespace?: string;
  /** Default: no length limit, no streaming, no typing, reactions or read receipts. */
  readonly capabilities?: Partial<ChannelCapabilities>;
  /**
   * Keep every outbound call in `sent`, `settled`, … for assertions (default true). Off for a long-lived channel
   * (Palaver's own `api` channel behind `chat()`), which must not grow with every turn.
   */
  readonly record?: boolean;
}

export interface SayOptions {
  /** Default `local`. */
  readonly accountId?: string;
  /** Default: the account id. */
  readonly conversationId?: string;
  readonly displayName?: string | null;
  readonly languageHint?: string;
  /** Set it to test redelivery: a second message with the same key is a duplicate. Default: none. */
  readonly dedupeKey?: string;
  /** Default: `m1`, `m2`, … in the order of `say` calls. */
  readonly messageId?: string;
  /** Cancels a lone message's turn, as a client that leaves does. */
  readonly signal?: AbortSignal;
  /** `shared` for a group conversation (several people write into it); default `direct`. */
  readonly conversationKind?: 'direct' | 'shared';
  /** A phone number the channel vouches for, as a shared contact of the sender's own is. */
  readonly phone?: string;
}

/** What `say` resolves with: the acceptance, and the id the message was sent with. */
export type Said = Acceptance & { readonly messageId: string };

/** The reply to one message: the turn's outcome and the parts sent, in order. */
export interface MemoryReply {
  readonly outcome: TurnOutcome;
  readonly parts: readonly string[];
}

/** A call the pipeline made, as recorded for assertions. */
export interface Recorded<T> {
  readonly target: ReplyTarget;
  readonly value: T;
}

interface Waiter {
  readonly resolve: (reply: MemoryReply) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * A channel that lives in memory, for tests and for embedding Palaver in code: `say` hands a message to the
 * pipeline, `reply` waits for the turn that answers it. Every outbound call is recorded, in order.
 *
 * A batch of messages answered together gets one delivery: `sent` holds its parts once, and `reply` resolves
 * with the same `MemoryReply` for each message of the batch.
 *
 * @example
 * const chat = new MemoryChannel();
 * await palaver.addChannel(chat);
 * const said = await chat.say('hello', { accountId: 'alice' });
 * const { parts } = await chat.reply(said);
 */
export class MemoryChannel implements Channel {
  readonly name: string;
  readonly accountNamespace?: string;
  readonly capabilities: ChannelCapabilities;
  /** Every part sent, in order, with its target. */
  readonly sent: Array<Recorded<string>> = [];
  /** Every progress event (only when `capabilities.streaming`). */
  readonly progressEvents: Array<Recorded<TurnProgress>> = [];
  readonly typingCalls: ReplyTarget[] = [];
  readonly markReadCalls: ReplyTarget[] = [];
  readonly reactions: Array<Recorded<{ readonly messageId: string; readonly emoji: string }>> = [];
  /** Every settled turn, in order. */
  readonly settled: Array<Recorded<TurnEnd>> = [];
  readonly #record: boolean;
  #context: ChannelContext | undefined;
  #stopped = false;
  #counter = 0;
  /** Parts of turns not settled yet, by turn. */
  readonly #pending = new Map<string, string[]>();
  /** Settled replies (or errors) by message id, for `reply` calls that come after the turn. */
  readonly #results = new Map<string, { readonly reply?: MemoryReply; readonly error?: unknown }>();
  readonly #waiters = new Map<string, Waiter[]>();
  readonly #duplicates = new Set<string>();

  constructor(options: MemoryChannelOptions = {}) {
    this.name = options.name ?? 'memory';
    if (options.accountNamespace !== undefined) this.accountNamespace = options.accountNamespace;
    this.#record = options.record ?? true;
    this.capabilities = { maxMessageChars: null, streaming: false, typing: false, reactions: false, readReceipts: false, ...options.capabilities };
  }

  async start(context: ChannelContext): Promise<void> {
    if (this.#context) throw new Error(`MemoryChannel "${this.name}".start() was called twice; a channel belongs to one Palaver.`);
    this.#context = context;
  }

  /** After `stop`, `say` throws. Safe to call twice. */
  async stop(): Promise<void> {
    this.#stopped = true;
  }

  /**
   * Hands a message to the pipeline; resolves once it is stored (`accepted`) or recognised as a redelivery
   * (`duplicate`), with the message id to pass to `reply`.
   * @throws Error when the channel was not started or was stopped; ChannelError `inbound_invalid` from the pipeline.
   */
  async say(text: string, options: SayOptions = {}): Promise<Said> {
    const context = this.#context;
    if (!context || this.#stopped) {
      throw new Error(`MemoryChannel "${this.name}" is ${this.#stopped ? 'stopped' : 'not started'}: add it to a running Palaver before say().`);
    }
    const accountId = options.accountId ?? 'local';
    const messageId = options.messageId ?? `m${++this.#counter}`;
    const acceptance = await context.accept(
      {
        channel: this.name,
        accountId,
        conversationId: options.conversationId ?? accountId,
        text,
        messageId,
        ...(options.displayName === undefined ? {} : { displayName: options.displayName }),
        ...(options.languageHint === undefined ? {} : { languageHint: options.languageHint }),
        ...(options.dedupeKey === undefined ? {} : { dedupeKey: options.dedupeKey }),
        ...(options.conversationKind === undefined ? {} : { conversationKind: options.conversationKind }),
        ...(options.phone === undefined ? {} : { phone: options.phone }),
      },
      options.signal ? { signal: options.signal } : {},
    );
    if (acceptance.status === 'duplicate') this.#duplicates.add(messageId);
    return { ...acceptance, messageId };
  }

  /**
   * Stores messages in a conversation's history without a turn (`ChannelContext.record`): nothing is answered.
   * @throws Error when the channel was not started or was stopped; ChannelError from the pipeline.
   */
  async recordHistory(conversation: RecordedConversation, entries: readonly RecordedMessage[]): Promise<{ readonly stored: number }> {
    const context = this.#context;
    if (!context || this.#stopped) {
      throw new Error(`MemoryChannel "${this.name}" is ${this.#stopped ? 'stopped' : 'not started'}: add it to a running Palaver before recordHistory().`);
    }
    return context.record(conversation, entries);
  }

  /**
   * The reply to a message, once its turn settled; at once if it already has and the reply was not collected yet (a
   * reply is handed out once, so a long-lived channel keeps nothing). Rejects with the turn's error when it ended
   * without a reply, and at once for a duplicate, which is never answered here.
   */
  reply(message: string | Said): Promise<MemoryReply> {
    const messageId = typeof message === 'string' ? message : message.messageId;
    if (this.#duplicates.has(messageId)) {
      return Promise.reject(new Error(`Message ${messageId} was a duplicate of an earlier one; no reply comes for it.`));
    }
    const result = this.#results.get(messageId);
    if (result) {
      // Handed out once: a long-lived channel keeps no reply that was already collected.
      this.#results.delete(messageId);
      return result.reply ? Promise.resolve(result.reply) : Promise.reject(result.error);
    }
    return new Promise((resolve, reject) => {
      const waiters = this.#waiters.get(messageId) ?? [];
      waiters.push({ resolve, reject });
      this.#waiters.set(messageId, waiters);
    });
  }

  /** `reply`, but rejects after `timeoutMs` (default 5000) with a message naming the message id. */
  async waitForReply(message: string | Said, options: { readonly timeoutMs?: number } = {}): Promise<MemoryReply> {
    const timeoutMs = options.timeoutMs ?? 5000;
    const messageId = typeof message === 'string' ? message : message.messageId;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`No reply to message ${messageId} within ${timeoutMs} ms.`)), timeoutMs);
    });
    try {
      return await Promise.race([this.reply(message), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async send(target: ReplyTarget, text: string): Promise<SentPart> {
    if (this.#record) this.sent.push({ target, value: text });
    const parts = this.#pending.get(turnKey(target)) ?? [];
    parts.push(text);
    this.#pending.set(turnKey(target), parts);
    return { messageId: `${target.correlationId}:${parts.length}` };
  }

  async typing(target: ReplyTarget): Promise<void> {
    if (this.#record) this.typingCalls.push(target);
  }

  async markRead(target: ReplyTarget): Promise<void> {
    if (this.#record) this.markReadCalls.push(target);
  }

  async react(target: ReplyTarget, messageId: string, emoji: string): Promise<void> {
    if (this.#record) this.reactions.push({ target, value: { messageId, emoji } });
  }

  progress(target: ReplyTarget, event: TurnProgress): void {
    if (this.#record) this.progressEvents.push({ target, value: event });
  }

  settle(target: ReplyTarget, end: TurnEnd): void {
    if (this.#record) this.settled.push({ target, value: end });
    const parts = this.#pending.get(turnKey(target)) ?? [];
    this.#pending.delete(turnKey(target));
    const result = end.kind === 'answered' ? { reply: { outcome: end.outcome, parts } } : { error: end.error };
    for (const messageId of target.inReplyTo) {
      const waiters = this.#waiters.get(messageId);
      // Kept for a `reply` call still to come; a message someone already waits for is answered and forgotten.
      if (!waiters) {
        this.#results.set(messageId, result);
        continue;
      }
      for (const waiter of waiters) {
        if (result.reply) waiter.resolve(result.reply);
        else waiter.reject(result.error);
      }
      this.#waiters.delete(messageId);
    }
  }
}

function turnKey(target: ReplyTarget): string {
  return `${target.conversationId}\u0000${target.correlationId}\u0000${target.inReplyTo.join('\u0000')}`;
}
