/**
 * Per-conversation inbox: at most one turn per conversation at a time, and messages that arrive while a turn
 * runs (or within the quiet window before it starts) are answered together by the next turn.
 */
export interface InboxOptions<Item> {
  /**
   * Runs one turn for a batch of items of one conversation (oldest first, never empty). A rejection is reported to
   * `onError` and the conversation goes on with its next batch.
   */
  readonly runBatch: (conversationKey: string, items: readonly [Item, ...Item[]]) => Promise<void>;
  readonly onError: (error: unknown, conversationKey: string) => void;
  /**
   * Whether `item` may be answered in the same turn as `first` (default: always). The batch is the longest run of
   * waiting items that may; the rest wait for the next turn (in a group chat, a batch never mixes senders).
   */
  readonly sameBatch?: (first: Item, item: Item) => boolean;
  /** Quiet window: a turn starts only after this many ms without a new message (0: start at once). */
  readonly debounceMs?: number;
}

interface Conversation<Item> {
  pending: Item[];
  running: boolean;
  timer: NodeJS.Timeout | undefined;
}

export class Inbox<Item> {
  readonly #options: InboxOptions<Item>;
  readonly #conversations = new Map<string, Conversation<Item>>();
  readonly #idle = new Set<() => void>();

  constructor(options: InboxOptions<Item>) {
    this.#options = options;
  }

  /** Queues `item` for the conversation's next turn. */
  submit(conversationKey: string, item: Item): void {
    let conversation = this.#conversations.get(conversationKey);
    if (!conversation) {
      conversation = { pending: [], running: false, timer: undefined };
      this.#conversations.set(conversationKey, conversation);
    }
    conversation.pending.push(item);
    this.#schedule(conversationKey, conversation);
  }

  /** Resolves when no turn is running or waiting (used on shutdown). */
  async drain(): Promise<void> {
    if (this.#conversations.size === 0) return;
    await new Promise<void>((resolve) => this.#idle.add(resolve));
  }

  #takeBatch(conversation: Conversation<Item>): [Item, ...Item[]] {
    const { pending } = conversation;
    const sameBatch = this.#options.sameBatch;
    let size = pending.length;
    if (sameBatch) {
      size = 1;
      while (size < pending.length && sameBatch(pending[0]!, pending[size]!)) size++;
    }
    conversation.pending = pending.slice(size);
    return pending.slice(0, size) as [Item, ...Item[]];
  }

  #schedule(key: string, conversation: Conversation<Item>): void {
    if (conversation.running) return; // the running turn picks the new message up when it ends
    const debounceMs = this.#options.debounceMs ?? 0;
    if (debounceMs <= 0) {
      void this.#drainConversation(key, conversation);
      return;
    }
    clearTimeout(conversation.timer);
    conversation.timer = setTimeout(() => void this.#drainConversation(key, conversation), debounceMs);
  }

  async #drainConversation(key: string, conversation: Conversation<Item>): Promise<void> {
    conversation.timer = undefined;
    conversation.running = true;
    while (conversation.pending.length > 0) {
      const batch = this.#takeBatch(conversation);
      try {
        await this.#options.runBatch(key, batch);
      } catch (error) {
        this.#options.onError(error, key);
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
