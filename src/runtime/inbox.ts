/**
 * Per-conversation inbox: at most one turn per conversation at a time, and messages that arrive while a turn runs
 * (or within the quiet window before it starts) are answered together by the next turn.
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
  /**
   * Turns running at once across all conversations (default: no limit). Conversations ready beyond it wait their
   * turn in arrival order, holding only their queued messages: a crowd of thousands costs memory per message, not
   * per half-run turn.
   */
  readonly maxRunning?: number;
}

/** When a conversation's next turn may start. */
export interface QuietWindow {
  /** A turn starts only after this many ms without a new message (0: at once). */
  readonly quietWindowMs: number;
  /** …but no later than this many ms after the first waiting message arrived. */
  readonly maxWaitMs: number;
}

const AT_ONCE: QuietWindow = { quietWindowMs: 0, maxWaitMs: 0 };

interface Conversation<Item> {
  pending: Item[];
  running: boolean;
  timer: NodeJS.Timeout | undefined;
  /** When the oldest waiting message arrived, and when the newest did (for the quiet window). */
  firstWaitingAt: number;
  lastArrivedAt: number;
  window: QuietWindow;
}

export class Inbox<Item> {
  readonly #options: InboxOptions<Item>;
  readonly #conversations = new Map<string, Conversation<Item>>();
  readonly #idle = new Set<() => void>();
  /** Conversations whose turn may start but waits for a free slot, oldest first. */
  readonly #ready: [string, Conversation<Item>][] = [];
  #running = 0;
  #held = 0;

  constructor(options: InboxOptions<Item>) {
    this.#options = options;
  }

  /** Queues `item` for the conversation's next turn, which starts when `window` allows. */
  submit(conversationKey: string, item: Item, window: QuietWindow = AT_ONCE): void {
    this.submitAll(conversationKey, [item], window);
  }

  /**
   * Queues several items at once, so one turn answers them together (as far as `sameBatch` allows): messages taken
   * over after a crash, or held while their conversation was paused.
   */
  submitAll(conversationKey: string, items: readonly Item[], window: QuietWindow = AT_ONCE): void {
    if (items.length === 0) return;
    const now = performance.now();
    let conversation = this.#conversations.get(conversationKey);
    if (!conversation) {
      conversation = { pending: [], running: false, timer: undefined, firstWaitingAt: now, lastArrivedAt: now, window };
      this.#conversations.set(conversationKey, conversation);
    }
    if (conversation.pending.length === 0) conversation.firstWaitingAt = now;
    conversation.pending.push(...items);
    this.#held += items.length;
    conversation.lastArrivedAt = now;
    conversation.window = window;
    this.#schedule(conversationKey, conversation);
  }

  /** Messages waiting in a conversation (not counting those its running turn answers). */
  waiting(conversationKey: string): number {
    return this.#conversations.get(conversationKey)?.pending.length ?? 0;
  }

  /** Items submitted and not yet through their turn, across conversations: waiting ones and those a turn holds. */
  get held(): number {
    return this.#held;
  }

  /** Resolves when no turn is running or waiting (used on shutdown). */
  async drain(): Promise<void> {
    if (this.#conversations.size === 0) return;
    await new Promise<void>((resolve) => this.#idle.add(resolve));
  }

  #schedule(key: string, conversation: Conversation<Item>): void {
    if (conversation.running) return; // the running turn schedules the next one when it ends
    clearTimeout(conversation.timer);
    const { quietWindowMs, maxWaitMs } = conversation.window;
    if (quietWindowMs <= 0) {
      this.#start(key, conversation);
      return;
    }
    const now = performance.now();
    const due = Math.min(conversation.lastArrivedAt + quietWindowMs, conversation.firstWaitingAt + Math.max(quietWindowMs, maxWaitMs));
    conversation.timer = setTimeout(() => this.#start(key, conversation), Math.max(0, due - now));
  }

  /** Starts the conversation's turn now, or queues it for the next free slot. */
  #start(key: string, conversation: Conversation<Item>): void {
    conversation.timer = undefined;
    conversation.running = true;
    if (this.#running >= (this.#options.maxRunning ?? Number.POSITIVE_INFINITY)) {
      this.#ready.push([key, conversation]);
      return;
    }
    void this.#drainConversation(key, conversation);
  }

  async #drainConversation(key: string, conversation: Conversation<Item>): Promise<void> {
    this.#running += 1;
    // Taken now, not when it became ready: what arrived while it waited for a slot joins this turn.
    const batch = this.#takeBatch(conversation);
    try {
      await this.#options.runBatch(key, batch);
    } catch (error) {
      this.#options.onError(error, key);
    }
    this.#held -= batch.length;
    this.#running -= 1;
    const next = this.#ready.shift();
    if (next) void this.#drainConversation(next[0], next[1]);
    conversation.running = false;
    if (conversation.pending.length > 0) {
      // Messages that came during the turn start exactly one next turn, after their own quiet window.
      this.#schedule(key, conversation);
      return;
    }
    this.#conversations.delete(key);
    if (this.#conversations.size === 0) {
      for (const resolve of this.#idle) resolve();
      this.#idle.clear();
    }
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
    // What stays behind (another sender's messages) waits from now on.
    if (conversation.pending.length > 0) conversation.firstWaitingAt = performance.now();
    return pending.slice(0, size) as [Item, ...Item[]];
  }
}
