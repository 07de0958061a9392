import type { Selectable } from 'kysely';
import type {
  Audience,
  ChannelAccount,
  MessageRole,
  Session,
  SessionStatus,
  StoredMessage,
  ToolCallRecord,
  ToolCallRef,
  ToolCallStatus,
  User,
  UserStateRecord,
} from '../../domain/model.js';
import { fromStoredCost } from '../../domain/money.js';
import { estimateTokens } from '../../domain/token-estimate.js';
import type { ChannelAccountsTable, MessagesTable, SessionsTable, ToolCallsTable, UsersTable, UserStateTable } from './schema.js';

// Row → record mapping, shared by the repositories. Every conversion that differs by driver (int8 as string on pg,
// numeric with trailing zeros) is normalised here, so records look the same on both back ends.

/** Distinct texts {@link shared} keeps; past it a text is returned as read (the columns it serves hold a few values). */
const SHARED_TEXTS_MAX = 1024;
const sharedTexts = new Map<string, string>();

/**
 * One string per distinct value of a column that holds few (channel names, statuses, currencies, roles): every row
 * read otherwise brings its own copy, and records that live long, such as the sessions and accounts of a crowd's
 * waiting messages, kept some 24 bytes per copy (over 10 MB at 100,000 conversations).
 */
export function shared<T extends string | null>(value: T): T {
  if (value === null) return value;
  const known = sharedTexts.get(value);
  if (known !== undefined) return known as T;
  if (sharedTexts.size < SHARED_TEXTS_MAX) sharedTexts.set(value, value);
  return value;
}

/** Epoch milliseconds (number or pg int8 string) to a Date. */
export function toDate(value: number | string): Date {
  return new Date(Number(value));
}

export function toUser(row: Pick<Selectable<UsersTable>, 'id' | 'display_name' | 'phone' | 'created_at'>): User {
  return { id: row.id, displayName: row.display_name, phone: row.phone, createdAt: toDate(row.created_at) };
}

export function toChannelAccount(row: Selectable<ChannelAccountsTable>): ChannelAccount {
  return { channel: shared(row.channel), accountId: row.account_id, userId: row.user_id, createdAt: toDate(row.created_at) };
}

export function toSession(row: Selectable<SessionsTable>): Session {
  return {
    id: row.id,
    userId: row.user_id,
    channel: shared(row.channel),
    conversationId: row.conversation_id,
    status: shared(row.status) as SessionStatus,
    title: row.title,
    inputTokens: Number(row.input_tokens),
    outputTokens: Number(row.output_tokens),
    cachedInputTokens: Number(row.cached_input_tokens),
    cost: fromStoredCost(row.cost),
    currency: shared(row.currency),
    pausedAt: row.paused_at == null ? null : toDate(row.paused_at),
    endedAt: row.ended_at == null ? null : toDate(row.ended_at),
    assignedTo: row.assigned_to,
    assignedAt: row.assigned_at == null ? null : toDate(row.assigned_at),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
  };
}

export function toMessage(row: Selectable<MessagesTable>): StoredMessage {
  return {
    id: row.id,
    sessionId: row.session_id,
    seq: Number(row.seq),
    role: shared(row.role) as MessageRole,
    audience: shared(row.audience) as Audience,
    content: row.content,
    toolCalls: row.tool_calls === null ? null : (JSON.parse(row.tool_calls) as ToolCallRef[]),
    toolCallId: row.tool_call_id,
    model: shared(row.model),
    inputTokens: Number(row.input_tokens),
    outputTokens: Number(row.output_tokens),
    cachedInputTokens: Number(row.cached_input_tokens),
    // 0 only on rows stored before migration 0008: estimated now, as the insert would have.
    tokenEstimate: Number(row.token_estimate) || estimateTokens(row.content, row.tool_calls),
    cost: fromStoredCost(row.cost),
    currency: shared(row.currency),
    correlationId: row.correlation_id,
    meta: row.meta === null ? null : (JSON.parse(row.meta) as Record<string, unknown>),
    createdAt: toDate(row.created_at),
  };
}

export function toUserState(row: Selectable<UserStateTable>): UserStateRecord {
  return { userId: row.user_id, version: Number(row.version), raw: row.data, updatedAt: toDate(row.updated_at) };
}

export function toToolCall(row: Selectable<ToolCallsTable>): ToolCallRecord {
  return {
    callId: row.call_id,
    sessionId: row.session_id,
    userId: row.user_id,
    correlationId: row.correlation_id,
    name: row.name,
    arguments: row.arguments,
    status: row.status as ToolCallStatus,
    result: row.result,
    createdAt: toDate(row.created_at),
    finishedAt: row.finished_at === null ? null : toDate(row.finished_at),
    turnId: row.turn_id ?? null,
  };
}
