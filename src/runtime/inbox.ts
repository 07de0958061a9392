/**
 * Per-conversation inbox: at most one turn per conversation at a time, and messages that arrive while a turn
 * runs (or within the quiet window before it starts) are answered together by the next turn.
 */
export interface InboxOptions<Item, Result> {
  /** Runs one turn for a batch of items of one conversation. */
  readonly runBatch: (conversationKey: string, items: readonly Item[]) => Promise<Result>;
  /** Quiet window: a turn starts only after this many ms without a new message (0: start at once). */
  readonly debounceMs?: number;
}

interface Waiter<Item, Result> {
  readonly item: Item;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

interface Conversation<Item, Result> {
  pending: Waiter<Item, Result>[];
  running: boolean;
  timer: NodeJS.Timeout | undefined;
}

export class Inbox<Item, Result> {
  readonly #options: InboxOptions<Item, Result>;
  readonly #conversations = new Map<string, Conversation<Item, Result>>();
  readonly #idle = new Set<() => void>();

  constructor(options: InboxOptions<Item, Result>) {
    this.#options = options;
  }

  /** Queues `item`; resolves with the result of the turn that answered it (possibly shared with others). */
  submit(conversationKey: string, item: Item): Promise<Result> {
    let conversation = this.#conversations.get(conversationKey);
    if (!conversation) {
      conversation = { pending: [], running: false, timer: undefined };
      this.#conversations.set(conversationKey, conversation);
    }
    const promise = new Promise<Result>((resolve, reject) => conversation.pending.push({ item, resolve, reject }));
    this.#schedule(conversationKey, conversation);
    return promise;
  }

  /** Conversations with a turn running or waiting. */
  get activeConversations(): number {
    return this.#conversations.size;
  }

  /** Resolves when no turn is running or waiting (used on shutdown). */
  async drain(): Promise<void> {
    if (this.#conversations.size === 0) return;
    await new Promise<void>((resolve) => this.#idle.add(resolve));
  }

  #schedule(key: string, conversation: Conversation<Item, Result>): void {
    if (conversation.running) return; // the running turn picks the new message up when it ends
    const debounceMs = this.#options.debounceMs ?? 0;
    if (debounceMs <= 0) {
      void this.#drainConversation(key, conversation);
      return;
    }
    clearTimeout(conversation.timer);
    conversation.timer = setTimeout(() => void this.#drainConversation(key, conversation), debounceMs);
  }

  async #drainConversation(key: string, conversation: Conversation<Item, Result>): Promise<void> {
    conversation.timer = undefined;
    conversation.running = true;
    while (conversation.pending.length > 0) {
      const batch = conversation.pending;
      conversation.pending = [];
      try {
        const result = await this.#options.runBatch(key, batch.map((waiter) => waiter.item));
        for (const waiter of batch) waiter.resolve(result);
      } catch (error) {
        for (const waiter of batch) waiter.reject(error);
      }
    }
    conversation.running = false;
    this.#conversations.delete(key);
    if (this.#conversations.size === 0) {
      for (const resolve of this.#idle) resolve();
      this.#idle.clear();
    }
  }
}
