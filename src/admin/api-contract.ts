import { z } from 'zod';
import { actorName } from './admin-principal.js';

/**
 * The operator's admin API, as data: every route's query, body and answer as a zod schema. The server answers with
 * these shapes, `palaver admin` (the console) parses answers with them, and the dashboard reads the same JSON. All
 * routes live under `/admin` behind the admin token (`Authorization: Bearer …`) or a dashboard session cookie.
 *
 * Money is a decimal string in the named currency, never a float. Times are ISO 8601 strings. Lists page with an
 * opaque `cursor`: pass a page's `nextCursor` to get the next one; `null` means there is no more.
 *
 *   GET  /admin/users?q=&cursor=&limit=                       users (search by name, phone digits, account id)
 *   GET  /admin/users/:userId                                 the user (existing route: accounts, role, profile)
 *   GET  /admin/users/:userId/events                          identity audit (existing)
 *   GET  /admin/conversations?q=&channel=&userId=&status=&paused=&cursor=&limit=
 *   GET  /admin/conversations/:sessionId                      one conversation
 *   GET  /admin/conversations/:sessionId/transcript?audit=1&limit=
 *   POST /admin/conversations/:sessionId/messages             send as the agent {text}; `Idempotency-Key` header
 *   POST /admin/conversations/:sessionId/pause                the agent stops answering it (messages still stored)
 *   POST /admin/conversations/:sessionId/take                 take it {force?}: assigned to you, the agent paused
 *   POST /admin/conversations/:sessionId/resume               hand it back {note?}: waiting messages are answered, once
 *   POST /admin/conversations/:sessionId/end                  ends it: the next message opens a fresh context
 *   GET  /admin/costs?by=day|user|conversation&from=&to=&userId=&sessionId=&limit=
 *   GET  /admin/turns/live                                    turns running or waiting now
 *   GET  /admin/overview                                      inbox depth, outbox, tool stream backlog
 *   GET  /admin/actions?limit=                                the operators' own audit (actor, request id)
 *   GET  /admin/approvals?status=&limit=                      tool calls waiting for (or given) a decision, newest first
 *   POST /admin/approvals/:id/approve                         approve an operator's request: 200 {status}; 409 decided
 *                                                             already or expired; 403 a person's request
 *   POST /admin/approvals/:id/decline                         decline one {reason?}: as approve
 *   POST /admin/telegram-user/sync                            store a private chat's history {chat, after?, limit?}
 *                                                             (the Telegram user account's route, where it runs)
 *   GET  /admin/me                                            who calls: {actor, role, operatorId}
 *   GET  /admin/operators                                     the operator accounts, disabled ones too
 *   POST /admin/operators                                     add one {name, role?}: 201 {operator, token}
 *   POST /admin/operators/:id/disable                         its token and sign-ins stop working at once
 *   POST /admin/operators/:id/reset-token                     a new token {operator, token}; the old one stops
 *
 * Who may call what: an `operator` reads users, conversations, transcripts, live turns and the audit, acts in
 * conversations (every route under /admin/conversations/:id/) and decides approval requests; the rest is for `admin` (the admin token, or an
 * operator account with that role): see `src/admin/admin-roles.ts`.
 *
 * Errors: `{ "error": { "code", "message" } }` with 400 (invalid_request), 401 (no or a wrong token), 403 (the admin
 * API is off, or `forbidden`: the caller's role may not), 404 (not_found), 409 (conflict).
 */

const iso = z.string();
const money = z.string().regex(/^-?\d+(\.\d+)?$/);
/** A query's point in time: an ISO 8601 instant ("2026-11-27T10:00:00Z") or a UTC day ("2026-11-27"). */
const instant = z
  .string()
  .max(40)
  .refine((value) => !Number.isNaN(Date.parse(value)), 'expected an ISO 8601 date or time, such as 2026-11-27 or 2026-11-27T10:00:00Z');
export const pageLimit = z.coerce.number().int().min(1).max(500).default(50);

export const accountView = z.object({ channel: z.string(), accountId: z.string() });

export const userSummary = z.object({
  id: z.string(),
  displayName: z.string().nullable(),
  /** E.164 digits, or null. */
  phone: z.string().nullable(),
  role: z.string().nullable(),
  accounts: z.array(accountView),
  conversations: z.number().int(),
  /** What their conversations cost in `currency`: the currency of their latest conversation ("0" when none). */
  cost: money,
  /** The currency of `cost`; null when they have no conversation yet. */
  currency: z.string().nullable(),
  /**
   * Every currency their conversations were billed in, `currency` first: a session keeps one currency, but a user's
   * next one may be billed in another (their country changed), and currencies are never added together.
   */
  costs: z.array(z.object({ currency: z.string(), cost: money })),
  createdAt: iso,
  lastActiveAt: iso.nullable(),
});
export type UserSummary = z.infer<typeof userSummary>;

export const usersQuery = z.object({ q: z.string().max(200).optional(), cursor: z.string().max(500).optional(), limit: pageLimit });
export const usersPage = z.object({ users: z.array(userSummary), nextCursor: z.string().nullable() });

export const conversationStatus = z.enum(['pending', 'running', 'completed', 'failed']);

export const conversationSummary = z.object({
  sessionId: z.string(),
  channel: z.string(),
  conversationId: z.string(),
  title: z.string().nullable(),
  user: z.object({ id: z.string(), displayName: z.string().nullable() }),
  status: conversationStatus,
  paused: z.boolean(),
  /** Ended by an operator: the next message starts a fresh context. */
  endedAt: iso.nullable(),
  /** The operator who took it (`POST …/take`); null when nobody has. */
  assignedTo: z.string().nullable(),
  /** Its open handoff to a person: why, who asked (`model`, `tool`, `phrase`), when, and who took it; null when none is open. */
  handoff: z.object({ reason: z.string(), source: z.enum(['model', 'tool', 'phrase']), requestedAt: iso, takenBy: z.string().nullable() }).nullable(),
  lastMessage: z.object({ role: z.enum(['user', 'assistant']), text: z.string(), at: iso }).nullable(),
  /** Accepted messages not answered yet (waiting for a turn, or held while paused). */
  waiting: z.number().int(),
  cost: money,
  currency: z.string(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  createdAt: iso,
  updatedAt: iso,
});
export type ConversationSummary = z.infer<typeof conversationSummary>;

export const conversationsQuery = z.object({
  q: z.string().max(200).optional(),
  channel: z.string().max(64).optional(),
  userId: z.string().max(128).optional(),
  status: conversationStatus.optional(),
  paused: z
    .enum(['true', 'false'])
    .transform((value) => value === 'true')
    .optional(),
  cursor: z.string().max(500).optional(),
  limit: pageLimit,
});
export const conversationsPage = z.object({ conversations: z.array(conversationSummary), nextCursor: z.string().nullable() });

export const toolCallView = z.object({
  callId: z.string(),
  name: z.string(),
  arguments: z.string(),
  status: z.enum(['running', 'succeeded', 'failed']),
  result: z.string().nullable(),
  latencyMs: z.number().int().nullable(),
  error: z.string().nullable(),
});

export const transcriptMessage = z.object({
  id: z.string(),
  seq: z.number().int(),
  role: z.enum(['user', 'assistant', 'tool', 'system']),
  /** `display`: what the person and the agent said; `audit` (only with `?audit=1`): tool traffic, stage outputs, plans. */
  audience: z.string(),
  text: z.string(),
  at: iso,
  correlationId: z.string().nullable(),
  model: z.string().nullable(),
  cost: money,
  /** Who wrote an assistant message: the agent, an operator (send as agent), or Palaver itself (an apology, a notice). */
  author: z.enum(['person', 'agent', 'operator', 'palaver']),
  toolCalls: z.array(toolCallView).optional(),
});
export const transcriptQuery = z.object({
  audit: z
    .enum(['0', '1', 'true', 'false'])
    .transform((v) => v === '1' || v === 'true')
    .optional(),
  limit: z.coerce.number().int().min(1).max(2000).default(500),
});
/** A version of the conversation's summary (`agent.memory.summarize`): what it covers, its text, and what writing it cost. */
export const transcriptSummary = z.object({
  version: z.number().int(),
  /** It covers the display messages after `fromSeq` up to and including `toSeq`. */
  fromSeq: z.number().int(),
  toSeq: z.number().int(),
  text: z.string(),
  model: z.string(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  cost: money,
  currency: z.string(),
  at: iso,
  /** The version the agent reads now (the newest since the conversation's last reset or end). */
  current: z.boolean(),
});
/** The conversation, its last messages, and its summaries newest first (none when summaries are off). */
export const transcript = z.object({
  conversation: conversationSummary,
  messages: z.array(transcriptMessage),
  summaries: z.array(transcriptSummary).default([]),
});

export const sendAsAgentBody = z.strictObject({ text: z.string().trim().min(1).max(16_000) });
/** 202: stored and handed to the channel's outbox; a repeat with the same `Idempotency-Key` answers the same. */
export const sentAsAgent = z.object({ messageId: z.string(), parts: z.number().int(), duplicate: z.boolean() });

/** Answer of pause and resume; `changed` is false when the conversation already was so, `answering` (resume) the held messages now answered. */
export const pauseState = z.object({ sessionId: z.string(), paused: z.boolean(), changed: z.boolean(), answering: z.number().int().optional() });
/** Body of take: `force` takes it over from another operator who has it. */
export const takeBody = z.strictObject({ force: z.boolean().optional() });
/** Answer of take: the operator it is assigned to, whether that changed, and that the agent is paused. */
export const takenConversation = z.object({ sessionId: z.string(), assignedTo: z.string(), changed: z.boolean(), paused: z.boolean() });
/** Body of resume: a note the agent reads (never the person) in its next turn. */
export const resumeBody = z.strictObject({ note: z.string().trim().min(1).max(4_000).optional() });
/** Answer of end. */
export const endedConversation = z.object({ sessionId: z.string(), status: conversationStatus, endedAt: iso.nullable() });

/** Answer of the Telegram user account's history sync: the person, what was read and what was new. */
export const telegramSynced = z.object({
  user: z.object({ id: z.number(), displayName: z.string(), username: z.string().nullable() }),
  fetched: z.number().int(),
  stored: z.number().int(),
  firstId: z.number().int().optional(),
  lastId: z.number().int().optional(),
});

export const costsQuery = z.object({
  by: z.enum(['day', 'user', 'conversation']).default('day'),
  /** From this instant (inclusive); a bare day starts at its UTC midnight. */
  from: instant.optional(),
  /** Up to this instant (exclusive); a bare day is included whole. */
  to: instant.optional(),
  userId: z.string().max(128).optional(),
  sessionId: z.string().max(128).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
export const modelUsage = z.object({
  model: z.string(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  cachedInputTokens: z.number().int(),
  cost: money,
});
export const costRow = z.object({
  /** The day (`YYYY-MM-DD`, UTC), user id or session id. */
  key: z.string(),
  /** A readable name for the key (the user's name, the conversation's title). */
  label: z.string().nullable(),
  cost: money,
  currency: z.string(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  turns: z.number().int(),
  models: z.array(modelUsage),
});
/**
 * One row per key and currency (the latest `limit` days in calendar order, or the users and conversations that cost
 * most); `totals` per currency over everything the query matched, not only the rows returned. A turn's tokens and
 * cost are on its reply, under the model that answered last.
 */
export const costs = z.object({
  by: z.enum(['day', 'user', 'conversation']),
  rows: z.array(costRow),
  totals: z.array(z.object({ currency: z.string(), cost: money })),
});

export const liveTurn = z.object({
  sessionId: z.string(),
  channel: z.string(),
  conversationId: z.string(),
  userId: z.string(),
  /**
   * `running`: a live process has the messages (their turn is starting or under way); `paused`: held by an operator's
   * pause; `waiting`: nobody works on them now (their process died and its lease has not run out, or a retry is due).
   */
  state: z.enum(['waiting', 'running', 'paused']),
  messages: z.number().int(),
  oldestAt: iso,
});
export const liveTurns = z.object({ turns: z.array(liveTurn) });

export const overview = z.object({
  inbox: z.object({ waiting: z.number().int(), running: z.number().int(), paused: z.number().int() }),
  outbox: z.object({ pending: z.number().int(), failed: z.number().int() }),
  /** Present when tools are dispatched over Redis Streams. */
  toolStream: z.object({ backlog: z.number().int(), deadLetters: z.number().int() }).nullable(),
});

export const adminAction = z.object({
  id: z.string(),
  action: z.enum([
    'send',
    'pause',
    'resume',
    'end',
    'take',
    'handoff',
    'profile',
    'phone',
    'role',
    'flow_state',
    'relink',
    'operator_add',
    'operator_disable',
    'operator_reset_token',
    'approval',
  ]),
  /** The operator account's name; for the admin token `admin`, or the name its client sent (`X-Palaver-Actor`); `agent` for a handoff. */
  actor: z.string(),
  /** The operator account that acted (its name is proven by its token); null for the admin token. */
  operatorId: z.string().nullable(),
  requestId: z.string().nullable(),
  sessionId: z.string().nullable(),
  userId: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
  at: iso,
});
export const adminActions = z.object({ actions: z.array(adminAction) });

/** A conversation handed to a person and not closed yet: waiting for one (`takenBy` null) or taken by one. */
export const handoffView = z.object({
  id: z.string(),
  sessionId: z.string(),
  /** The conversation's channel and title; null when the conversation cannot be read. */
  channel: z.string().nullable(),
  conversationId: z.string().nullable(),
  title: z.string().nullable(),
  person: z.object({ id: z.string(), name: z.string().nullable() }),
  /** Why, in the words of whoever asked: the model, a tool, or the phrase the person wrote. */
  reason: z.string(),
  source: z.enum(['model', 'tool', 'phrase']),
  requestedAt: iso,
  /** The operator who took it; null while it waits for one. */
  takenBy: z.string().nullable(),
  takenAt: iso.nullable(),
  /** Rounds of notices sent to operators so far. */
  notices: z.number().int(),
});
export type HandoffView = z.infer<typeof handoffView>;
export const handoffsQuery = z.object({ limit: z.coerce.number().int().min(1).max(500).default(100) });
/** Open handoffs, oldest first; `waiting` counts those nobody has taken. */
export const handoffs = z.object({ handoffs: z.array(handoffView), waiting: z.number().int() });
export const operatorRole = z.enum(['operator', 'admin']);

/** An operator account; its token is never shown again after it is issued. */
export const operatorAccount = z.object({
  id: z.string(),
  /** Unique whatever its case; what the audit shows for their actions. */
  name: z.string(),
  role: operatorRole,
  createdAt: iso,
  /** Set once disabled: the token and the dashboard sessions no longer work. */
  disabledAt: iso.nullable(),
});
export const operatorAccounts = z.object({ operators: z.array(operatorAccount) });
/** `POST /admin/operators`: a name for the audit (letters, digits, spaces, `._@-`) and a role (default `operator`). */
export const newOperatorBody = z.strictObject({ name: actorName, role: operatorRole.default('operator') });
/** 201 of `POST /admin/operators`, and the answer of `reset-token`: the token, shown this once. */
export const issuedOperatorToken = z.object({ operator: operatorAccount, token: z.string() });
/** Answer of `POST /admin/operators/:id/disable`. */
export const disabledOperator = z.object({ operator: operatorAccount });

/** `GET /admin/me`: who the server takes the caller for. */
export const adminMe = z.object({
  /** The name the audit records for this caller's actions. */
  actor: z.string(),
  role: operatorRole,
  /** The operator account; null for the admin token. */
  operatorId: z.string().nullable(),
});

export const approvalStatus = z.enum(['pending', 'approved', 'declined', 'expired']);

/** A tool call that waits for a decision (or got one): who decides it, what they are shown, and where it stands. */
export const approvalView = z.object({
  id: z.string(),
  tool: z.string(),
  /** What will happen, in plain words: what the person (or the operator) is shown. */
  summary: z.string(),
  /** Who decides: `person` (the person the turn answers, in their chat) or `operator` (here). */
  by: z.enum(['person', 'operator']),
  status: approvalStatus,
  sessionId: z.string(),
  userId: z.string(),
  channel: z.string(),
  conversationId: z.string(),
  requestedAt: iso,
  /** Undecided by then, it is declined as expired (`tools.approvalTimeoutMinutes`). */
  expiresAt: iso,
  decidedAt: iso.nullable(),
  /** `person:<channel>:<account>`, an operator's name, `admin`, or `expiry`; null while pending. */
  decidedBy: z.string().nullable(),
  reason: z.string().nullable(),
});
export type ApprovalView = z.infer<typeof approvalView>;
export const approvalsQuery = z.object({ status: approvalStatus.optional(), limit: z.coerce.number().int().min(1).max(500).default(100) });
/** Approval requests, newest first. */
export const approvals = z.object({ approvals: z.array(approvalView) });
/** Body of decline: why, kept with the decision and in the audit. */
export const declineBody = z.strictObject({ reason: z.string().trim().min(1).max(1_000).optional() });
/** 200 of approve and decline: the decision taken. 409 carries the request's `status` beside the error. */
export const approvalDecided = z.object({ id: z.string(), status: z.enum(['approved', 'declined']) });
