import type { HandoffSource } from '../handoff.js';
import type { Audience, MessageRole, SessionStatus, SummaryRecord, ToolCallRef } from '../model.js';

/**
 * What operators read (the admin API's users, conversations, transcripts, costs and live turns): queries across
 * users and sessions that no turn needs, kept apart from the repositories the pipeline writes through. Every adapter
 * runs the contract in `test/store/operator-queries-contract.ts`.
 *
 * Lists page by an opaque cursor: pass a page's `nextCursor` back to get the next page; the order is stable (ties
 * broken by id), so a list that does not change meanwhile is walked without gaps or duplicates.
 */
export interface OperatorQueries {
  /**
   * Users, newest first. `q` matches a part of the name (case-insensitive for ASCII on SQLite), of the phone's
   * digits (spaces, dashes and a plus in `q` are ignored), or of a channel account id.
   * @throws StoreError `invalid_cursor` for a cursor this query did not hand out.
   */
  users(query: UserListQuery): Promise<OperatorPage<UserOverview>>;
  /**
   * Conversations, most recently active first. `q` matches a part of the title, the conversation id, the session id
   * or the person's name.
   * @throws StoreError `invalid_cursor` for a cursor this query did not hand out.
   */
  conversations(query: ConversationListQuery): Promise<OperatorPage<ConversationOverview>>;
  /** One conversation, or undefined when there is no such session. */
  conversation(sessionId: string): Promise<ConversationOverview | undefined>;
  /**
   * The last `limit` messages of a conversation, oldest first: display messages only, or with `audit` the audit
   * records too (tool calls, stage outputs). Empty for an unknown session.
   */
  transcript(sessionId: string, options: { readonly audit: boolean; readonly limit: number }): Promise<TranscriptRecord[]>;
  /**
   * The conversation's summaries (`agent.memory.summarize`), newest version first, at most `limit`, each marked
   * whether turns read it now (the newest of the current context). Empty for an unknown session.
   */
  summaries(sessionId: string, limit: number): Promise<SummaryOverview[]>;
  /**
   * What replies cost, grouped by UTC day, user or conversation, one row per key and currency (currencies are never
   * added together), with tokens per model. Sums are exact.
   */
  costs(query: CostQuery): Promise<CostReport>;
  /** Accepted messages not answered yet, per conversation and state, oldest first. */
  liveTurns(): Promise<LiveTurnRecord[]>;
  /** Inbox and outbox depth now. */
  depth(): Promise<QueueDepth>;
}

/** A page of a list and the cursor of the next one (null: this was the last). */
export interface OperatorPage<T> {
  readonly items: readonly T[];
  readonly nextCursor: string | null;
}

export interface UserListQuery {
  readonly q?: string | undefined;
  readonly cursor?: string | undefined;
  readonly limit: number;
}

/** An amount in one currency (a decimal string). */
export interface MoneyAmount {
  readonly currency: string;
  readonly cost: string;
}

export interface UserOverview {
  readonly id: string;
  readonly displayName: string | null;
  readonly phone: string | null;
  /** The user's state JSON as stored (the runtime's schema reads its role), or null when none is stored. */
  readonly stateJson: string | null;
  readonly accounts: readonly { readonly channel: string; readonly accountId: string }[];
  readonly conversations: number;
  /** What their conversations cost, per currency, the currency of their latest conversation first. */
  readonly costs: readonly MoneyAmount[];
  readonly createdAt: Date;
  /** When one of their conversations last changed; null when they have none. */
  readonly lastActiveAt: Date | null;
}

export interface ConversationListQuery {
  readonly q?: string | undefined;
  readonly channel?: string | undefined;
  readonly userId?: string | undefined;
  readonly status?: SessionStatus | undefined;
  readonly paused?: boolean | undefined;
  readonly cursor?: string | undefined;
  readonly limit: number;
}

export interface ConversationOverview {
  readonly sessionId: string;
  readonly channel: string;
  readonly conversationId: string;
  readonly title: string | null;
  readonly user: { readonly id: string; readonly displayName: string | null };
  readonly status: SessionStatus;
  readonly pausedAt: Date | null;
  readonly endedAt: Date | null;
  /** The operator who took the conversation; null when nobody has. */
  readonly assignedTo: string | null;
  /** Its open handoff to a person (asked for, not yet resumed or ended); null when none is open. */
  readonly handoff: OpenHandoffOverview | null;
  /** The last display message the person or the agent wrote (its text cut to 280 characters). */
  readonly lastMessage: { readonly role: 'user' | 'assistant'; readonly text: string; readonly at: Date } | null;
  /** Accepted messages not answered yet. */
  readonly waiting: number;
  readonly cost: string;
  readonly currency: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** An open handoff as the conversation list shows it. */
export interface OpenHandoffOverview {
  readonly reason: string;
  readonly source: HandoffSource;
  readonly requestedAt: Date;
  /** The operator who took it; null while nobody has. */
  readonly takenBy: string | null;
}

/** A stored message as an operator reads it, with the tool call its audit record is about. */
export interface TranscriptRecord {
  readonly id: string;
  readonly seq: number;
  readonly role: MessageRole;
  readonly audience: Audience;
  readonly content: string;
  readonly toolCalls: readonly ToolCallRef[] | null;
  readonly model: string | null;
  readonly cost: string;
  readonly correlationId: string | null;
  readonly meta: Readonly<Record<string, unknown>> | null;
  readonly createdAt: Date;
}

/** A version of a conversation's summary as an operator reads it. */
export interface SummaryOverview extends SummaryRecord {
  /** The version turns read now: the newest written since the conversation's last reset or end. */
  readonly current: boolean;
}

export type CostGrouping = 'day' | 'user' | 'conversation';

export interface CostQuery {
  readonly by: CostGrouping;
  /** From this instant on (inclusive). */
  readonly from?: Date | undefined;
  /** Up to this instant (exclusive). */
  readonly to?: Date | undefined;
  readonly userId?: string | undefined;
  readonly sessionId?: string | undefined;
  /** At most this many rows: the latest days, or the users and conversations that cost most. */
  readonly limit: number;
}

export interface ModelUsageRecord {
  readonly model: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens: number;
  readonly cost: string;
}

export interface CostRecord {
  /** `YYYY-MM-DD` (UTC), a user id or a session id. */
  readonly key: string;
  /** The user's name or the conversation's title. */
  readonly label: string | null;
  readonly currency: string;
  readonly cost: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Replies that called a model. */
  readonly turns: number;
  readonly models: readonly ModelUsageRecord[];
}

export interface CostReport {
  /** Days in order; users and conversations by cost, highest first. */
  readonly rows: readonly CostRecord[];
  /** Per currency, over everything the query matched (not only the rows returned). */
  readonly totals: readonly MoneyAmount[];
}

/**
 * `running`: a live process has them (their turn is starting or under way); `paused`: held by an operator's pause;
 * `waiting`: nobody works on them now (their process is gone and its lease not run out yet, or a retry is due later).
 */
export type LiveTurnState = 'waiting' | 'running' | 'paused';

export interface LiveTurnRecord {
  readonly sessionId: string;
  readonly channel: string;
  readonly conversationId: string;
  readonly userId: string;
  readonly state: LiveTurnState;
  readonly messages: number;
  readonly oldestAt: Date;
}

export interface QueueDepth {
  /** Accepted messages not answered yet, by {@link LiveTurnState}. */
  readonly inbox: Readonly<Record<LiveTurnState, number>>;
  /** Reply parts in the outbox: not sent yet, and refused by their channel for good. */
  readonly outbox: { readonly pending: number; readonly failed: number };
}
