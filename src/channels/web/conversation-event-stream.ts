import type { ConversationEvent, ConversationWatcher } from './conversation-events.js';

/** What one open page is sent: the events it may see, an operator shown by the label the channel chose. */
export type PageEvent =
  | Exclude<ConversationEvent, { type: 'operator_message' }>
  | { readonly type: 'operator_message'; readonly id: string; readonly text: string; readonly author: string; readonly at: string }
  | { readonly type: 'state'; readonly paused: boolean };

export interface ConversationEventStreamOptions {
  readonly accountId: string;
  /** The client's address, for the cap on pages open per address. */
  readonly address?: string | undefined;
  /** The request's signal: the page went away. */
  readonly signal: AbortSignal;
  readonly keepAliveMs: number;
  /** How an operator is shown on this page (their name, or the team's, in the page's language). */
  readonly authorOf: (operator: string) => string;
}

const textEncoder = new TextEncoder();

/**
 * One page's `GET /conversations/events` stream: server-sent `data:` lines of `PageEvent`s, a comment line that keeps
 * idle proxies from closing it, closed when the page goes (or the channel ends it).
 */
export class ConversationEventStream implements ConversationWatcher {
  readonly accountId: string;
  readonly address: string | undefined;
  readonly body: ReadableStream<Uint8Array>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #open = true;
  readonly #keepAlive: NodeJS.Timeout;
  readonly #options: ConversationEventStreamOptions;
  readonly #closed: Array<() => void> = [];

  constructor(options: ConversationEventStreamOptions) {
    this.#options = options;
    this.accountId = options.accountId;
    this.address = options.address;
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      cancel: () => this.#end(),
    });
    this.#keepAlive = setInterval(() => this.#write(': keep-alive\n\n'), options.keepAliveMs);
    this.#keepAlive.unref();
    options.signal.addEventListener('abort', () => this.close(), { once: true });
  }

  /** Runs `listener` once the stream closed, for whatever reason. */
  onClose(listener: () => void): void {
    if (this.#open) this.#closed.push(listener);
    else listener();
  }

  /** Writes one event; an operator's name becomes the label this page shows. */
  send(event: ConversationEvent | PageEvent): void {
    const shown: PageEvent =
      event.type === 'operator_message' && 'operator' in event
        ? { type: 'operator_message', id: event.id, text: event.text, author: this.#options.authorOf(event.operator), at: event.at }
        : (event as PageEvent);
    this.#write(`data: ${JSON.stringify(shown)}\n\n`);
  }

  close(): void {
    if (!this.#open) return;
    try {
      this.#controller.close();
    } catch {
      // Cancelled by the client already.
    }
    this.#end();
  }

  #write(text: string): void {
    if (!this.#open) return;
    try {
      this.#controller.enqueue(textEncoder.encode(text));
    } catch {
      this.#end();
    }
  }

  #end(): void {
    if (!this.#open) return;
    this.#open = false;
    clearInterval(this.#keepAlive);
    for (const listener of this.#closed.splice(0)) listener();
  }
}
