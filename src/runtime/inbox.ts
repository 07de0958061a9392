import { DueSchedule, type Scheduled } from './due-schedule.js';

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

interface Conversation<Item> extends Scheduled {
  readonly key: string;
  pending: Item[];
  running: boolean;
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
  readonly #ready: Conversation<Item>[] = [];
  /**
   * Conversations waiting for their quiet window to end, earliest first, under one timer: a timer, its callback and
   * their context per conversation cost some 200 bytes each, which a crowd of 100,000 pays.
   */
  readonly #schedule = new DueSchedule<Conversation<Item>>();
  #timer: NodeJS.Timeout | undefined;
  #timerDue = Number.POSITIVE_INFINITY;
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
   * over after a crash, or held while their conversation was paused. `arrived` says how long ago the newest and the
   * oldest of them arrived (default: now): the quiet window counts from their arrival, not from the takeover.
   */
  submitAll(
    conversationKey: string,
    items: readonly Item[],
    window: QuietWindow = AT_ONCE,
    arrived?: { readonly newestMsAgo: number; readonly oldestMsAgo: number },
  ): void {
    if (items.length === 0) return;
    const now = performance.now();
    const newest = now - Math.max(0, arrived?.newestMsAgo ?? 0);
    const oldest = Math.min(newest, now - Math.max(0, arrived?.oldestMsAgo ?? 0));
    let conversation = this.#conversations.get(conversationKey);
    if (!conversation) {
      conversation = { key: conversationKey, pending: [], running: false, firstWaitingAt: oldest, lastArrivedAt: newest, window, due: 0, slot: -1, order: 0 };
      this.#conversations.set(conversationKey, conversation);
    }
    if (conversation.pending.length === 0) conversation.firstWaitingAt = oldest;
    // `concat` makes an array of exactly the right length: `push` (and spreading) reserves spare slots, some 130
    // bytes in each of a crowd's thousands of conversations.
    conversation.pending = conversation.pending.concat(items);
    this.#held += items.length;
    // A message that came in meanwhile keeps the window open from its own arrival.
    conversation.lastArrivedAt = conversation.pending.length === items.length ? newest : Math.max(conversation.lastArrivedAt, newest);
    conversation.window = window;
    this.#scheduleTurn(conversation);
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

  #scheduleTurn(conversation: Conversation<Item>): void {
    if (conversation.running) return; // the running turn schedules the next one when it ends
    const { quietWindowMs, maxWaitMs } = conversation.window;
    if (quietWindowMs <= 0) {
      this.#schedule.remove(conversation);
      this.#start(conversation);
      return;
    }
    const due = Math.min(conversation.lastArrivedAt + quietWindowMs, conversation.firstWaitingAt + Math.max(quietWindowMs, maxWaitMs));
    this.#schedule.add(conversation, due);
    this.#armTimer();
  }

  /** Starts every conversation whose quiet window has ended, then waits for the next one. */
  #startDue(): void {
    // The timer firing means its moment came, as a timer per conversation did: the clock may read a hair earlier.
    const reached = Math.max(this.#timerDue, performance.now());
    this.#timer = undefined;
    this.#timerDue = Number.POSITIVE_INFINITY;
    for (let next = this.#schedule.first; next !== undefined && next.due <= reached; next = this.#schedule.first) {
      this.#schedule.remove(next);
      this.#start(next);
    }
    this.#armTimer();
  }

  /** The one timer, set for the earliest quiet window to end. */
  #armTimer(): void {
    const next = this.#schedule.first;
    if (next === undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#timerDue = Number.POSITIVE_INFINITY;
      return;
    }
    if (this.#timer !== undefined && this.#timerDue === next.due) return;
    clearTimeout(this.#timer);
    this.#timerDue = next.due;
    this.#timer = setTimeout(() => this.#startDue(), Math.max(0, next.due - performance.now()));
  }

  /** Starts the conversation's turn now, or queues it for the next free slot. */
  #start(conversation: Conversation<Item>): void {
    conversation.running = true;
    if (this.#running >= (this.#options.maxRunning ?? Number.POSITIVE_INFINITY)) {
      this.#ready.push(conversation);
      return;
    }
    void this.#drainConversation(conversation);
  }

  async #drainConversation(conversation: Conversation<Item>): Promise<void> {
    const { key } = conversation;
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
    if (next) void this.#drainConversation(next);
    conversation.running = false;
    if (conversation.pending.length > 0) {
      // Messages that came during the turn start exactly one next turn, after their own quiet window.
      this.#scheduleTurn(conversation);
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
