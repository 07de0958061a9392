/**
 * Plain records of the domain. Times are UTC instants (Date); the user's zone is applied only when rendering.
 * Money is a decimal string (e.g. "0.000150") so no float rounding sneaks in between store and bill.
 */

export type MessageRole = 'user' | 'assistant' | 'tool' | 'system';

/** `display` messages are the conversation the person sees; `audit` records are internal and never shown. */
export type Audience = 'display' | 'audit';

export type SessionStatus = 'pending' | 'running' | 'completed' | 'failed';

export interface User {
  readonly id: string;
  readonly displayName: string | null;
  /** E.164 digits without the plus, when known. */
  readonly phone: string | null;
  readonly createdAt: Date;
}

export interface ChannelAccount {
  readonly channel: string;
  readonly accountId: string;
  readonly userId: string;
  readonly createdAt: Date;
}

export interface Session {
  readonly id: string;
  readonly userId: string;
  readonly channel: string;
  /** The channel's conversation key: an AG-UI thread id, a Telegram chat id, "console". */
  readonly conversationId: string;
  readonly status: SessionStatus;
  readonly title: string | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Of `inputTokens`, those read from a prompt cache. */
  readonly cachedInputTokens: number;
  /** Decimal string in `currency`. */
  readonly cost: string;
  readonly currency: string;
  /** When an operator paused the agent here: messages are stored and not answered until resumed. Null when not paused. */
  readonly pausedAt: Date | null;
  /** When an operator last ended the conversation (its context restarted then); null when never. */
  readonly endedAt: Date | null;
  /** The operator who took the conversation (see `HandoffRepository`), shown to the others; null when nobody has. */
  readonly assignedTo: string | null;
  readonly assignedAt: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface TokenUsage {
  /** Every input token, cached ones included. */
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Input tokens the provider read from its prompt cache (within `inputTokens`, priced at their own price); 0 when absent. */
  readonly cachedInputTokens?: number;
}

export interface StoredMessage {
  readonly id: string;
  readonly sessionId: string;
  /** Position within the session, starting at 1, assigned by the store. */
  readonly seq: number;
  readonly role: MessageRole;
  readonly audience: Audience;
  readonly content: string;
  /** Tool call id for `tool` messages, or JSON of the tool calls an assistant message made. */
  readonly toolCalls: readonly ToolCallRef[] | null;
  readonly toolCallId: string | null;
  readonly model: string | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Of `inputTokens`, those read from a prompt cache. */
  readonly cachedInputTokens: number;
  /** What this message is estimated to cost in a model's input (`estimateTokens`), computed once when stored. */
  readonly tokenEstimate: number;
  readonly cost: string;
  readonly currency: string;
  readonly correlationId: string | null;
  /** Free metadata, e.g. `{ fallback: true }`. */
  readonly meta: Readonly<Record<string, unknown>> | null;
  readonly createdAt: Date;
}

export interface ToolCallRef {
  readonly callId: string;
  readonly name: string;
  /** JSON text exactly as the model wrote it. */
  readonly arguments: string;
}

/**
 * A message to append; the session is given to `append`, the rest has defaults. `id` may be chosen by the caller (a
 * reply streamed under its id before it is stored keeps it); otherwise the store makes one.
 */
export type NewMessage = { readonly id?: string } & Omit<
  StoredMessage,
  | 'id'
  | 'sessionId'
  | 'seq'
  | 'createdAt'
  | 'tokenEstimate'
  | 'toolCalls'
  | 'toolCallId'
  | 'model'
  | 'inputTokens'
  | 'outputTokens'
  | 'cachedInputTokens'
  | 'cost'
  | 'currency'
  | 'correlationId'
  | 'meta'
> &
  Partial<
    Pick<
      StoredMessage,
      'toolCalls' | 'toolCallId' | 'model' | 'inputTokens' | 'outputTokens' | 'cachedInputTokens' | 'cost' | 'currency' | 'correlationId' | 'meta'
    >
  >;

export type ToolCallStatus = 'running' | 'succeeded' | 'failed';

/** The idempotency record of one tool call. */
export interface ToolCallRecord {
  readonly callId: string;
  readonly sessionId: string;
  readonly userId: string;
  readonly correlationId: string;
  readonly name: string;
  readonly arguments: string;
  readonly status: ToolCallStatus;
  readonly result: string | null;
  readonly createdAt: Date;
  readonly finishedAt: Date | null;
  /** The open turn whose journal holds the call, if any. */
  readonly turnId?: string | null;
}

/**
 * Per-user state: small, versioned JSON kept as text. The runtime parses and validates `raw`, so a corrupt row
 * is the runtime's to survive, not the store's to hide.
 */
export interface UserStateRecord {
  readonly userId: string;
  readonly version: number;
  readonly raw: string;
  readonly updatedAt: Date;
}

/**
 * Whether an accepted message still waits for its answer: `abandoned` when its turns kept failing and not even an
 * apology could be stored (`inbox.maxTurnAttempts`); `dropped` when the client that sent it left before its turn
 * began (a web run whose browser went away), so no turn answers it unless it is sent again.
 */
export type InboundState = 'queued' | 'answered' | 'abandoned' | 'dropped';

/**
 * An accepted inbound message: stored before its turn, leased to the process that will answer it, and marked
 * answered (with the reply's id) in the turn's closing transaction. What a crash leaves queued is answered once by
 * whoever takes it over after its lease ran out. Its text joins the conversation (`messages`) with the reply, in the
 * order the model saw it.
 */
/**
 * A file a person attached to a message, as it is kept beside the message (`meta.attachments`, the inbox row); its
 * bytes are in the store's attachments, read by id.
 */
export interface AttachmentRef {
  readonly id: string;
  /** `image`: shown to a model that accepts images; `file`: named to the model. */
  readonly kind: 'image' | 'file';
  /** The type its bytes' signature names (never only what the client declared). */
  readonly mimeType: string;
  /** A name fit to show (no folders, no control characters). */
  readonly name: string;
  readonly size: number;
}

/** An attachment with its bytes, as a channel hands it over (already checked by the channel). */
export type NewAttachment = Omit<AttachmentRef, 'id'> & { readonly bytes: Uint8Array };

/** An attachment as stored: its reference, the conversation it belongs to, its bytes. */
export interface StoredAttachment extends AttachmentRef {
  readonly sessionId: string;
  readonly bytes: Uint8Array;
}

export interface InboundRecord {
  readonly id: string;
  readonly channel: string;
  readonly conversationId: string;
  readonly accountId: string;
  /** The namespace identity binds the account under (`Channel.accountNamespace`, by default the channel's name). */
  readonly accountNamespace: string;
  readonly userId: string;
  readonly sessionId: string;
  readonly text: string;
  /** Files attached to it (their bytes are in the store's attachments); absent or empty: none. */
  readonly attachments?: readonly AttachmentRef[];
  /** The channel's id of the message (AG-UI run id, Telegram message id). */
  readonly messageId: string | null;
  /** Redelivery key, unique per channel and conversation. */
  readonly dedupeKey: string | null;
  readonly correlationId: string;
  readonly languageHint: string | null;
  readonly displayName: string | null;
  readonly conversationKind: 'direct' | 'shared';
  readonly receivedAt: Date;
  readonly state: InboundState;
  /**
   * Turns that took the message so far, this one included (1 on accept); counted in the store across restarts. A
   * takeover after a crash counts only when a turn had begun work on it (a model or tool call journaled).
   */
  readonly attempts: number;
  /** The reply that answered it, once answered, and its place in the session. */
  readonly replyMessageId: string | null;
  readonly replySeq: number | null;
  /** Set when a per-person rate limit stopped it (`limits.perPerson`): answered without the model. */
  readonly rateLimited?: 'notice' | 'silent';
}

/** A message to accept; the store sets id, state, lease and time. `accountNamespace` defaults to the channel. */
export type NewInboundRecord = Omit<
  InboundRecord,
  'id' | 'receivedAt' | 'state' | 'attempts' | 'replyMessageId' | 'replySeq' | 'accountNamespace' | 'rateLimited'
> & {
  readonly accountNamespace?: string;
};

/**
 * A summary of the older part of a conversation (`agent.memory.summarize`), one version of it: it covers the display
 * messages after `fromSeq` up to and including `toSeq`, and is what the model reads in their place.
 */
export interface SummaryRecord {
  readonly id: string;
  readonly sessionId: string;
  /** 1, 2, … per session: each version covers what the previous one did and more (a rolling summary). */
  readonly version: number;
  /** Where the conversation's context started when it was written: a reset or an operator's end makes it stale. */
  readonly fromSeq: number;
  /** The last display message it covers. */
  readonly toSeq: number;
  readonly text: string;
  /** The model that wrote it, and its call's tokens and cost (a decimal string in `currency`). */
  readonly model: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cost: string;
  readonly currency: string;
  readonly createdAt: Date;
}
