/** A message as it arrives from any channel, before identity and inbox. */
export interface InboundMessage {
  /** Channel name: `web`, `console`, `api`, `telegram-bot`, … */
  readonly channel: string;
  /** The person's account on that channel (Telegram user id, AG-UI user, "local"). */
  readonly accountId: string;
  readonly displayName?: string | null;
  /** The conversation on that channel: AG-UI thread id, Telegram chat id, … */
  readonly conversationId: string;
  readonly text: string;
  /** The channel's own id for this delivery; a redelivered update with the same key is ignored. */
  readonly dedupeKey?: string;
  /** Language the channel reports for the person (BCP-47), used when no profile setting exists. */
  readonly languageHint?: string;
  /** Correlation id to carry through logs; generated when absent. */
  readonly correlationId?: string;
}

/** What a turn reports while it runs, so a channel can stream it. */
export type TurnEvent =
  | { readonly type: 'turn_started'; readonly correlationId: string; readonly sessionId: string }
  | { readonly type: 'text_delta'; readonly messageId: string; readonly delta: string }
  | { readonly type: 'tool_call'; readonly callId: string; readonly name: string; readonly arguments: string }
  | { readonly type: 'tool_result'; readonly callId: string; readonly name: string; readonly content: string; readonly isError: boolean }
  | { readonly type: 'reply'; readonly messageId: string; readonly text: string };

export interface TurnOutcome {
  readonly correlationId: string;
  readonly sessionId: string;
  readonly userId: string;
  /** The text the person receives (an apology when the turn failed). */
  readonly reply: string;
  readonly replyMessageId: string;
  readonly status: 'completed' | 'failed' | 'duplicate';
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number; readonly cost: string; readonly currency: string };
}

/**
 * The runtime as channels see it: hand in a message, receive events and the outcome.
 * Implemented by `runtime/palaver-runtime.ts`; channels depend only on this port.
 */
export interface ConversationHandler {
  handle(message: InboundMessage, options?: { onEvent?: (event: TurnEvent) => void; signal?: AbortSignal }): Promise<TurnOutcome>;
}

export interface ChannelCapabilities {
  readonly streaming: boolean;
  readonly maxMessageChars: number | null;
}

/**
 * A channel adapter. `start` is called once, after the handler is ready; messages that arrive before that are
 * not lost because adapters only begin listening inside `start`. `stop` is safe to call twice.
 */
export interface Channel {
  readonly name: string;
  readonly capabilities: ChannelCapabilities;
  start(handler: ConversationHandler): Promise<void>;
  stop(): Promise<void>;
}
