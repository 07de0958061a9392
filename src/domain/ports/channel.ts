import type { ApprovalDecision, ApprovalStatus, DeliveryApproval } from '../approval.js';
/**
 * The `Channel` port: one interface for both directions of a messaging channel (web, terminal, Telegram, …).
 *
 * Inbound, a channel hands each message to the pipeline through `ChannelContext.accept` and learns whether it was
 * stored. Outbound, the pipeline answers every turn exactly once through the channel's `send` (one call per part,
 * each at most `capabilities.maxMessageChars` long), shows typing, marks messages read and streams progress where
 * the channel says it can. A channel never runs a turn or talks to a model itself.
 */

import type { AttachmentRef, NewAttachment, StoredAttachment } from '../model.js';

/** A message as it arrives from any channel, before identity and inbox. */
export interface InboundMessage {
  /** Channel name: `web`, `console`, `api`, `telegram-bot`, … */
  readonly channel: string;
  /** The person's account on that channel (Telegram user id, web visitor id, "local"). Set by the channel, never by the client. */
  readonly accountId: string;
  readonly displayName?: string | null;
  /** The conversation on that channel: AG-UI thread id, Telegram chat id, … */
  readonly conversationId: string;
  /** The person's text; may be empty when the message carries attachments. */
  readonly text: string;
  /**
   * Files the person attached, checked by the channel (type by signature, size); stored with the message in the
   * transaction that accepts it. Images reach models that accept images.
   */
  readonly attachments?: readonly NewAttachment[];
  /**
   * The channel's own id of this message (Telegram message id, AG-UI run id). A reply names the messages it answers
   * by these ids, so a channel can route it (the SSE stream of a run) or quote, react to, mark read.
   */
  readonly messageId?: string;
  /** The channel's id for this delivery; a redelivered update with the same key is ignored. */
  readonly dedupeKey?: string;
  /** Language the channel reports for the person (BCP-47), used when no profile setting exists. */
  readonly languageHint?: string;
  /** Correlation id to carry through logs; generated when absent. */
  readonly correlationId?: string;
  /**
   * `direct` (default): the conversation belongs to the user who opened it (and the accounts linked to them); a
   * message from anyone else is refused. `shared`: a group chat, open to every member; a batch never mixes senders
   * and each turn acts for the sender it answers.
   */
  readonly conversationKind?: 'direct' | 'shared';
  /** A phone number the person shared with the channel (a Telegram contact), as given; identity normalises it. */
  readonly phone?: string;
}

/**
 * What `accept` tells the channel: the message is stored and queued, or it was seen before. A duplicate whose
 * original was answered carries that stored reply, so a client that retries after a lost response gets it again.
 */
export type Acceptance =
  | { readonly status: 'accepted'; readonly correlationId: string; readonly sessionId: string; readonly userId: string }
  | { readonly status: 'duplicate'; readonly correlationId: string; readonly answered?: StoredReply };

/** A reply as stored: what the person was (or will be) sent. */
export interface StoredReply {
  readonly sessionId: string;
  readonly correlationId: string;
  readonly replyMessageId: string;
  readonly text: string;
  readonly status: 'completed' | 'failed';
  /** A failed reply's error id (the apology's "Error reference"). */
  readonly errorId?: string;
}

/** One conversation of an account, for a channel that lists them (the web page's sidebar). */
export interface ConversationSummary {
  readonly conversationId: string;
  readonly title: string | null;
  readonly status: 'pending' | 'running' | 'completed' | 'failed';
  readonly updatedAt: Date;
}

/** One displayed message of a conversation, in order; audit records and hidden context are never among them. */
export interface TranscriptEntry {
  readonly id: string;
  readonly role: 'user' | 'assistant';
  readonly text: string;
  readonly at: Date;
  /** Files the person attached (read with `ChannelContext.attachment`). */
  readonly attachments?: readonly AttachmentRef[];
  /** The operator who wrote it (a person stepping in through the admin API), as the audit names them. */
  readonly operator?: string;
  /**
   * The agent's question asks the person to approve a tool call, and the request still waits for their decision
   * (its id, as `decideApproval` takes it, and when it expires): a page shows its buttons again. Absent once decided.
   */
  readonly approval?: DeliveryApproval;
}

/** What a page shows of a conversation besides its messages. */
export interface ConversationState {
  /** An operator paused the agent here: a person will answer, the agent does not. */
  readonly paused: boolean;
}

/** How the client that sent a message may still change what happens to it. */
export interface AcceptOptions {
  /** Cancels a lone message's turn, also mid-way (a batch of several messages is never cancelled by one of them). */
  readonly signal?: AbortSignal;
  /**
   * Asked as the message's turn is about to begin (before any model call): true when its client has left with
   * nobody waiting for the answer. The message is then dropped (stored as `dropped`, no turn answers it; the others
   * of its batch are answered). A turn that began is never stopped by it, and a message sent again (the same
   * `dedupeKey`) is queued again.
   */
  readonly left?: () => boolean;
  /**
   * The most attachment bytes the sender's account may have stored on this channel, the new message's included;
   * beyond it the message is refused (`attachments_quota`) and nothing is stored. Absent: no bound.
   */
  readonly maxStoredAttachmentBytes?: number;
}

/** What the pipeline offers a channel while it runs. */
export interface ChannelContext {
  /**
   * Hands a message to the pipeline. Resolves once the message is stored and queued for a turn (or recognised as a
   * redelivery); the reply comes later through the channel's outbound side. See {@link AcceptOptions} for how a
   * waiting client may cancel its turn, or have it dropped when it leaves.
   * @throws ChannelError `inbound_invalid` for empty or oversized text or text a database cannot hold (NUL, lone
   *   surrogates), `forbidden` for a message into a direct conversation that belongs to someone else,
   *   `identity_unreachable` / `identity_unrecognised` when the identity resolver (the team's directory) cannot say who
   *   is writing (the error's message is a short text in the person's language to pass on); nothing is stored then.
   */
  accept(message: InboundMessage, options?: AcceptOptions): Promise<Acceptance>;
  /** The conversations `accountId` has on this channel, most recently active first (at most `limit`, default 50). */
  conversations(accountId: string, options?: { readonly limit?: number }): Promise<readonly ConversationSummary[]>;
  /**
   * The displayed messages of a conversation, oldest first (the last `limit`, default 200), for the account it
   * belongs to.
   * @throws ChannelError `forbidden` when the conversation belongs to someone else, `not_found` when there is none.
   */
  transcript(accountId: string, conversationId: string, options?: { readonly limit?: number }): Promise<readonly TranscriptEntry[]>;
  /**
   * Starts the conversation afresh (a `/reset` command): the model no longer sees its earlier messages and the
   * Responses chain is dropped; the role is kept. Messages already accepted are still answered.
   * @throws ChannelError `forbidden` / `not_found` as `transcript`.
   */
  reset(accountId: string, conversationId: string): Promise<void>;
  /**
   * The reply stored for a message accepted before (found by its `dedupeKey` in the conversation), once a turn
   * answered it; undefined while it waits, or when no such message was accepted. A read: nothing is accepted,
   * logged or counted, so a channel may ask it as often as it waits.
   * @throws ChannelError `forbidden` / `not_found` as `transcript`.
   */
  storedReply(accountId: string, conversationId: string, dedupeKey: string): Promise<StoredReply | undefined>;
  /**
   * A file attached in one of the account's conversations, with its bytes; undefined when that conversation holds
   * no such attachment.
   * @throws ChannelError `forbidden` / `not_found` as `transcript`.
   */
  attachment(accountId: string, conversationId: string, attachmentId: string): Promise<StoredAttachment | undefined>;
  /**
   * Whether an operator paused the agent in one of the account's conversations (read afresh from the store).
   * Optional: a context that cannot say leaves it out.
   * @throws ChannelError `forbidden` / `not_found` as `transcript`.
   */
  conversationState?(accountId: string, conversationId: string): Promise<ConversationState>;
  /**
   * The language Palaver's own texts to `accountId` are written in (a greeting, a confirmation, a refusal the channel
   * sends itself): the interface language of the person's profile, else `hint` (the channel's own guess, such as
   * Telegram's `language_code`), else the agent's default.
   */
  interfaceLanguage(accountId: string, hint?: string): Promise<string>;
  /**
   * Stores messages in a conversation's history without answering them: history imported from the messenger, the
   * account owner's own messages, messages that arrive while the owner has taken the conversation over. No turn
   * runs, nothing is sent, nothing is paid; the next turn's model sees them. Each entry is deduplicated by its
   * channel message id within the conversation (also against messages that came through `accept`), so importing the
   * same history twice stores nothing new. Entries are stored in the order given.
   * @returns how many entries were new.
   * @throws ChannelError `forbidden` for a direct conversation that belongs to someone else; nothing is stored then.
   */
  record(conversation: RecordedConversation, entries: readonly RecordedMessage[]): Promise<{ readonly stored: number }>;
  /** Small values the channel keeps across restarts (a polling offset, business connections), per channel. */
  readonly state: ChannelStateStore;
  /**
   * Decides a tool call's approval request for the person `accountId` (the account the channel verified: a Telegram
   * `callback_query`'s sender, the web caller's signed identity, never a field of the request). Only the person the
   * waiting turn answers may decide it, on the channel it was asked on; the first decision wins across processes,
   * and the turn then goes on. Resolves what happened, for the channel to tell the person (in
   * `interfaceLanguage`): decided now, decided before, expired, refused (not theirs, or an operator's to decide),
   * or unknown.
   */
  decideApproval(accountId: string, approvalId: string, decision: ApprovalDecision, options?: DecideOptions): Promise<ApprovalOutcome>;
}

/** How a channel passes a decision on. */
export interface DecideOptions {
  /**
   * The channel's id for the decision as a message of the conversation (an AG-UI run id): the turn that goes on
   * answers it, so the reply reaches the run that carried the decision. Absent: none.
   */
  readonly messageId?: string;
  /**
   * The conversation the decision was sent in (a web run's thread): a request asked in another conversation is
   * refused as not this one's, so the reply never goes where nobody waits for it. Absent: any of the person's.
   */
  readonly conversationId?: string;
}

/** What a decision on an approval request came to (see `ChannelContext.decideApproval`). */
export type ApprovalOutcome =
  | { readonly kind: 'decided'; readonly status: ApprovalDecision }
  /** Decided before (another press, another process, an operator): `status` is the decision that stands. */
  | { readonly kind: 'already'; readonly status: Exclude<ApprovalStatus, 'pending'> }
  | { readonly kind: 'expired' }
  /** `not_yours`: another person's request; `operator`: an operator decides this one. */
  | { readonly kind: 'refused'; readonly reason: 'not_yours' | 'operator' }
  | { readonly kind: 'not_found' };

/** The conversation `ChannelContext.record` stores into: the person on the other side, and the channel's chat. */
export interface RecordedConversation {
  /** The person's account (the other side of a private chat), as `InboundMessage.accountId`. */
  readonly accountId: string;
  readonly displayName?: string | null;
  readonly conversationId: string;
  readonly conversationKind?: 'direct' | 'shared';
}

/** One message stored without a turn. */
export interface RecordedMessage {
  /** `user`: the person wrote it; `assistant`: the account's own side did (its owner by hand, or an earlier reply). */
  readonly role: 'user' | 'assistant';
  readonly text: string;
  /** The channel's id of the message (Telegram message id): the dedupe key within the conversation. */
  readonly messageId: string;
  readonly at: Date;
  /**
   * Why it is stored without a turn: `imported` (history sync), `owner` (the account's owner wrote it by hand),
   * `held` (the person wrote it while the owner had taken the conversation over).
   */
  readonly source: 'imported' | 'owner' | 'held';
}

/** A channel's own key-value store, kept in Palaver's database. */
export interface ChannelStateStore {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

/** How the inbox treats a channel's conversations. */
export interface InboxPolicy {
  /**
   * Quiet window: a turn starts only after this many ms without a new message in the conversation, so a person who
   * sends three messages in a row gets one answer. Default 0 (answer at once).
   */
  readonly quietWindowMs?: number;
  /** The longest a first message waits for the quiet window while more keep coming. Default 4 × the window. */
  readonly maxWaitMs?: number;
  /** Messages that may wait in one conversation; past it a message is refused (ChannelError `busy`). Default 50. */
  readonly maxWaiting?: number;
}

/** What a channel can do; the pipeline reads these and never asks a channel for more. */
export interface ChannelCapabilities {
  /** Longest text one sent message may hold; longer replies are split into parts. `null`: no limit. */
  readonly maxMessageChars: number | null;
  /** The channel shows the reply while it is written: it receives `progress` events. */
  readonly streaming: boolean;
  /** `typing` is called when a turn starts and renewed every `typingIntervalMs` until the reply is sent. */
  readonly typing: boolean;
  /** `react` may be called (reply actions add reactions only where this is true). */
  readonly reactions: boolean;
  /**
   * The channel shows a question part's `SendOptions.approval` as buttons (or a prompt) and passes the answer to
   * `ChannelContext.decideApproval`. Absent or false: the question asks the person to answer "yes" or "no" in words.
   */
  readonly approvalButtons?: boolean;
  /**
   * The reaction emoji the channel accepts (Telegram allows a fixed set); a reply action with another one is skipped
   * and logged. Absent: any emoji.
   */
  readonly reactionEmoji?: readonly string[];
  /** `markRead` is called for the messages a turn answers, when the turn starts. */
  readonly readReceipts: boolean;
  /** How often a typing indicator must be renewed, in ms (Telegram's lasts 5 s). Default 4000. */
  readonly typingIntervalMs?: number;
  /**
   * The channel can deliver to a person who is not connected (a messenger, not an open web request). Its replies
   * then go through the outbox: stored with each part's delivery state before sending, each part marked sent with
   * the channel's message id, and parts a crash left unsent are sent after restart. Default false.
   */
  readonly offlineDelivery?: boolean;
}

/** Where a reply goes, and what it answers. */
export interface ReplyTarget {
  readonly channel: string;
  readonly conversationId: string;
  /** The account the reply answers (in a group chat: the sender of the batch). */
  readonly accountId: string;
  /** `InboundMessage.messageId`s of the messages this reply answers, oldest first (those that had one). */
  readonly inReplyTo: readonly string[];
  readonly correlationId: string;
  readonly sessionId: string;
}

/** What a turn reports while it runs, to channels that stream. */
export type TurnProgress =
  | { readonly type: 'text_delta'; readonly messageId: string; readonly delta: string }
  /** `label` is the tool's progress line for people, in their interface language (raw `name` is for operators). */
  | { readonly type: 'tool_call'; readonly callId: string; readonly name: string; readonly arguments: string; readonly label?: string }
  | { readonly type: 'tool_result'; readonly callId: string; readonly name: string; readonly content: string; readonly isError: boolean }
  /** The text streamed so far will not be the reply (the stream broke, or the reply was refused): drop it from view. */
  | { readonly type: 'discard'; readonly messageId: string };

/** How a turn ended, as the channel learns it after the reply was sent. */
export interface TurnOutcome {
  readonly correlationId: string;
  readonly sessionId: string;
  readonly userId: string;
  /** The whole reply the person receives (an apology when the turn failed), as stored. */
  readonly reply: string;
  readonly replyMessageId: string;
  readonly status: 'completed' | 'failed';
  /** A failed turn's error id: the one the apology shows the person ("Error reference: …") and the log carries. */
  readonly errorId?: string;
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number; readonly cost: string; readonly currency: string };
}

/** What the pipeline tells a channel about the part it sends. */
export interface SendOptions {
  /**
   * Stable id of this part's delivery: the same on every attempt to send it, in this process or after a crash (the
   * outbox record's id). A channel whose API takes an idempotency key (MTProto's `random_id`) derives it from this,
   * so the messenger itself drops a repeat.
   */
  readonly deliveryKey: string;
  /**
   * The channel's id of a message this part answers (a reply action's `reply_to`): a channel that can quote shows
   * the part as a reply to it. Absent: the channel's default (a Telegram bot quotes nothing).
   */
  readonly replyTo?: string;
  /**
   * The part asks the person to approve a tool call (its text says what will happen): a channel with buttons shows
   * Approve / Decline with it and hands the press to `ChannelContext.decideApproval`; any other channel sends the
   * text alone (the person answers in words).
   */
  readonly approval?: DeliveryApproval;
}

/** One sent part of a reply, as the channel knows it. */
export interface SentPart {
  /** The channel's id of the sent message (Telegram message id, …), kept with the reply's delivery record. */
  readonly messageId: string;
}

/** How a turn ended for the channel: answered (with the parts that were sent), or failed before any reply was stored. */
export type TurnEnd =
  | { readonly kind: 'answered'; readonly outcome: TurnOutcome; readonly parts: readonly SentPart[] }
  | { readonly kind: 'error'; readonly correlationId: string; readonly error: unknown };

/**
 * An HTTP route a channel adds to Palaver's server (the AG-UI endpoint, a webhook, a page). Web-standard
 * Request → Response, so a channel does not depend on the server's framework.
 */
export interface ChannelRoute {
  /** `OPTIONS` answers CORS preflights of the route's path. */
  readonly method: 'GET' | 'POST' | 'OPTIONS';
  /** Exact path, e.g. `/agui`. */
  readonly path: string;
  /**
   * `client`: the server's client guard applies (API key, or loopback only without one). `public`: anyone may call
   * it (a static page, or a webhook that checks its own secret). `admin`: an operator's route, behind the admin API's
   * guard (the admin token or a dashboard session); its path starts with `/admin/`.
   */
  readonly access: 'client' | 'public' | 'admin';
  /** Largest accepted request body in bytes (default 1 MiB). */
  readonly maxBodyBytes?: number;
  handle(request: Request, info: { readonly remoteAddress: string | undefined }): Response | Promise<Response>;
}

/**
 * A two-way channel adapter. `start` is called once, after the pipeline is ready; adapters begin listening only
 * inside it, so no message arrives before. `stop` is safe to call twice and stops listening before it resolves.
 *
 * Outbound methods are called by the pipeline only: `send` once per reply part, in order; the others only when the
 * matching capability is true. They may throw; the pipeline logs the failure and goes on.
 */
export interface Channel {
  /** Unique among the channels of one Palaver: `web`, `console`, `telegram-bot`, … */
  readonly name: string;
  /**
   * Whose account ids this channel's `accountId`s are, for identity: channels that see the same people under the
   * same ids (a Telegram bot and a Telegram user account both see Telegram user ids) share one namespace, so one
   * person is one user with one profile. Default: the channel's name.
   */
  readonly accountNamespace?: string;
  readonly capabilities: ChannelCapabilities;
  /** Routes to add to Palaver's HTTP server, when it serves. */
  readonly routes?: readonly ChannelRoute[];
  /** How the inbox treats this channel's conversations (quiet window, waiting cap). */
  readonly inbox?: InboxPolicy;
  start(context: ChannelContext): Promise<void>;
  stop(): Promise<void>;
  /**
   * Sends one part of a reply to the conversation.
   * @throws ChannelRetryLaterError when the messenger asks to wait (a flood wait): the part stays in the outbox and
   *   is sent after `retryAfterMs`; any other error refuses the part for good.
   */
  send(target: ReplyTarget, text: string, options?: SendOptions): Promise<SentPart>;
  /** Shows that a reply is being written (`capabilities.typing`). */
  typing?(target: ReplyTarget): Promise<void>;
  /** Reacts to one of the answered messages (`capabilities.reactions`). */
  react?(target: ReplyTarget, messageId: string, emoji: string): Promise<void>;
  /** Marks the answered messages read (`capabilities.readReceipts`). */
  markRead?(target: ReplyTarget): Promise<void>;
  /** The turn's progress as it happens (`capabilities.streaming`): text deltas, tool activity, discards. */
  progress?(target: ReplyTarget, event: TurnProgress): void;
  /**
   * The turn for `target` is over: its reply was stored and handed to `send` part by part, or it ended with an
   * error before a reply could be stored (then nothing was sent). A channel that holds a request open per message
   * (an SSE run) ends it here.
   */
  settle?(target: ReplyTarget, end: TurnEnd): void;
  /**
   * An operator acted in a conversation of this channel (see `OperatorEvent`): a channel whose pages hold a live
   * connection shows it there at once. With this member, a message an operator writes reaches the channel here
   * instead of through `send` (it is stored already; a page that is not open shows it from the transcript), unless
   * the channel delivers offline (the outbox). Must not throw.
   */
  showOperatorEvent?(conversation: OperatorEventTarget, event: OperatorEvent): void;
}

/** The conversation an operator acted in. */
export interface OperatorEventTarget {
  readonly conversationId: string;
  readonly sessionId: string;
}

/**
 * What an operator did that the person sees at once: wrote a message (stored as the agent's, `operator` names who
 * wrote it), or paused / resumed the agent.
 */
export type OperatorEvent =
  | { readonly kind: 'message'; readonly messageId: string; readonly text: string; readonly operator: string; readonly at: string }
  | { readonly kind: 'paused'; readonly paused: boolean };
