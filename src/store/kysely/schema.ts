import type { ColumnType, Generated, Insertable } from 'kysely';

/**
 * The tables as Kysely sees them. Column names are snake_case; repositories map rows to domain records explicitly
 * (no camel-case plugin, so every query reads like the SQL it runs).
 *
 * Representation choices that hold on both back ends:
 * - Instants are integer epoch milliseconds (`bigint`). `pg` returns int8 as a string, hence `number | string` on read.
 * - Money is `numeric(20, 10)` on PostgreSQL and canonical decimal text on SQLite; both come back as strings and never
 *   pass through a float.
 * - JSON columns (`tool_calls`, `meta`, `user_state.data`) are text.
 */
export interface Database {
  readonly users: UsersTable;
  readonly channel_accounts: ChannelAccountsTable;
  readonly sessions: SessionsTable;
  readonly messages: MessagesTable;
  readonly user_state: UserStateTable;
  readonly tool_calls: ToolCallsTable;
  readonly turns: TurnsTable;
  readonly tool_outbox: ToolOutboxTable;
  readonly turn_messages: TurnMessagesTable;
  readonly turn_model_calls: TurnModelCallsTable;
  readonly inbound_messages: InboundMessagesTable;
  readonly attachments: AttachmentsTable;
  readonly recorded_messages: RecordedMessagesTable;
  readonly deliveries: DeliveriesTable;
  readonly channel_state: ChannelStateTable;
  readonly channel_leases: ChannelLeasesTable;
  readonly conversation_claims: ConversationClaimsTable;
  readonly processes: ProcessesTable;
  readonly focus: FocusTable;
  readonly profiles: ProfilesTable;
  readonly daily_spend: DailySpendTable;
  readonly budget_reservations: BudgetReservationsTable;
  readonly identity_events: IdentityEventsTable;
  readonly admin_actions: AdminActionsTable;
  readonly dashboard_sessions: DashboardSessionsTable;
  readonly operators: OperatorsTable;
  readonly person_rate_hits: PersonRateHitsTable;
  readonly person_rate_notices: PersonRateNoticesTable;
  readonly handoffs: HandoffsTable;
  readonly tool_approvals: ToolApprovalsTable;
  readonly conversation_summaries: ConversationSummariesTable;
  readonly summary_claims: SummaryClaimsTable;
  readonly kysely_migration: KyselyMigrationTable;
  readonly kysely_migration_lock: KyselyMigrationLockTable;
}

/** Epoch milliseconds: written as a number, read back as a number (SQLite) or an int8 string (pg). */
export type EpochMillis = ColumnType<number | string, number, number>;

/** A 64-bit counter: same read-side caveat as {@link EpochMillis}. */
export type BigCounter = ColumnType<number | string, number | undefined, number>;

/** An exact decimal: always a string on the way in and out. */
export type DecimalText = ColumnType<string, string | undefined, string>;

export interface UsersTable {
  id: string;
  display_name: string | null;
  /** E.164 digits without the plus; unique when set. */
  phone: string | null;
  /** Where the phone came from (`typed` is a mere claim); null for phones set before this was recorded. */
  phone_source: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: EpochMillis;
}

export interface ChannelAccountsTable {
  channel: string;
  account_id: string;
  user_id: string;
  created_at: EpochMillis;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  channel: string;
  conversation_id: string;
  status: ColumnType<string, string | undefined, string>;
  title: string | null;
  input_tokens: BigCounter;
  output_tokens: BigCounter;
  /** Of `input_tokens`, those read from a prompt cache. */
  cached_input_tokens: BigCounter;
  cost: DecimalText;
  currency: ColumnType<string, string | undefined, string>;
  /**
   * The highest `seq` ever handed out in this session. Appends bump it under the row lock, so concurrent appends get
   * distinct, gap-free ranges without retries, and seqs are never reused after `messages.clear`.
   */
  last_seq: ColumnType<number, number | undefined, number>;
  /** The model sees only messages after this seq: a reset moves it to `last_seq` (nothing is deleted). */
  context_since_seq: ColumnType<number | string, number | undefined, number>;
  /** When an operator paused the agent here (its messages are stored, not answered); null while not paused. */
  paused_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** Since when a turn of this session waits for a tool call's approval (its messages held); null while none waits. */
  approval_pending_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** When an operator last ended the conversation; null when never. */
  ended_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** The operator who took the conversation; null when nobody has (see migration 0027). */
  assigned_to: ColumnType<string | null, string | null | undefined, string | null>;
  assigned_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  created_at: EpochMillis;
  updated_at: EpochMillis;
}

export interface MessagesTable {
  id: string;
  session_id: string;
  seq: number;
  role: string;
  audience: string;
  content: string;
  /** JSON array of `ToolCallRef`, or null. */
  tool_calls: string | null;
  tool_call_id: string | null;
  model: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: ColumnType<number, number | undefined, number>;
  /** Estimated input tokens (`estimateTokens`), set at insert; 0 on rows stored before it existed. */
  token_estimate: ColumnType<number, number | undefined, number>;
  cost: DecimalText;
  currency: string;
  correlation_id: string | null;
  /** JSON object, or null. */
  meta: string | null;
  created_at: EpochMillis;
}

/** The columns of a new message row, every one given. */
export type MessageValues = { -readonly [K in keyof Insertable<MessagesTable>]-?: Exclude<Insertable<MessagesTable>[K], undefined> };

export interface UserStateTable {
  user_id: string;
  version: number;
  data: string;
  updated_at: EpochMillis;
}

export interface ProfilesTable {
  user_id: string;
  /** The settings JSON (version, preferences, privacy, notification). */
  settings: string;
  updated_at: EpochMillis;
}

export interface FocusTable {
  session_id: string;
  /** Whose focus it is: in a group every member has their own. */
  user_id: string;
  entity_type: string;
  /** JSON array of {id, description}. */
  entities: string;
  loaded_at: EpochMillis;
}

/** A user's spend of one day (their calendar day, YYYY-MM-DD) in one currency, while a daily budget is set. */
export interface DailySpendTable {
  user_id: string;
  day: string;
  currency: string;
  cost: DecimalText;
}

/** A running turn's claim on its user's daily budget (and its session's), until its closing transaction settles it. */
export interface BudgetReservationsTable {
  /** The turn's first accepted message (`inbound_messages.id`). */
  turn_id: string;
  /** The process that reserved: the reservation counts while the turn's message is queued under its lease. */
  owner: string;
  user_id: string;
  day: string;
  session_id: string;
  amount: DecimalText;
  currency: string;
  created_at: EpochMillis;
}

export interface ToolCallsTable {
  call_id: string;
  session_id: string;
  user_id: string;
  correlation_id: string;
  name: string;
  arguments: string;
  status: string;
  result: string | null;
  created_at: EpochMillis;
  finished_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** The open turn the call belongs to (its journal); null for a call recorded outside a turn. */
  turn_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** An open turn: its reply is not stored yet. Gone with its journal when the reply is stored. */
/** Tool calls waiting for a worker's result (`tools.dispatch: "streams"`). */
export interface ToolOutboxTable {
  call_key: string;
  response_channel: string;
  /** JSON of the wire's `ToolCallRequested`. */
  payload: string;
  attempt: number;
  deadline: EpochMillis;
  published_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  created_at: EpochMillis;
}

export interface TurnsTable {
  id: string;
  session_id: string;
  /** The process working on the turn (the lease owner of its messages). */
  owner: string;
  created_at: EpochMillis;
}

/** The inbound messages an open turn answers, in order: one open turn per message. */
export interface TurnMessagesTable {
  inbound_id: string;
  turn_id: string;
  /** The message's place in the turn's batch (the order the model saw them). */
  position: number;
}

/** A model call of an open turn, by its place in the turn (0-based), with its response as JSON. */
export interface TurnModelCallsTable {
  turn_id: string;
  seq: number;
  call: string;
  created_at: EpochMillis;
}

/** Accepted messages waiting for (or answered by) a turn: the durable inbox. */
export interface InboundMessagesTable {
  id: string;
  channel: string;
  conversation_id: string;
  account_id: string;
  /** The namespace identity bound the account under (`Channel.accountNamespace`); null only on rows of before 0014. */
  account_namespace: ColumnType<string | null, string | undefined, string>;
  user_id: string;
  session_id: string;
  text: string;
  message_id: string | null;
  dedupe_key: string | null;
  correlation_id: string;
  language_hint: string | null;
  display_name: string | null;
  conversation_kind: ColumnType<string, string | undefined, string>;
  received_at: EpochMillis;
  /** Order of arrival (epoch microseconds, strictly increasing per writing process). */
  arrival: ColumnType<number | string, number, number>;
  /** `queued` until the turn that answers it commits, then `answered`; `abandoned` when given up on unanswered; `dropped` when its client left before its turn began. */
  state: ColumnType<string, string | undefined, string>;
  /** Turns that took the message (1 on accept). */
  attempts: ColumnType<number | string, number | undefined, number>;
  /** Epoch ms before which a failed message is not taken again; null when due. */
  not_before: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** The process holding the lease. */
  owner: string | null;
  lease_until: EpochMillis;
  reply_message_id: string | null;
  reply_seq: ColumnType<number | string | null, number | null | undefined, number | null>;
  answered_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** JSON of the message's attachment references (`AttachmentRef[]`); null when it has none. */
  attachments: ColumnType<string | null, string | null | undefined, string | null>;
  /** Set when a per-person rate limit stopped it (`notice` | `silent`): answered without the model. Null: not limited. */
  rate_limited: ColumnType<string | null, string | null | undefined, string | null>;
}

/** Messages a per-person rate limit let through, by person and scope (see migration 0026). */
export interface PersonRateHitsTable {
  id: string;
  user_id: string;
  /** `*` for the limit of every channel, else the channel's name. */
  scope: string;
  at: EpochMillis;
}

/** Until when a person's "too many messages" notice holds, by scope (see migration 0026). */
export interface PersonRateNoticesTable {
  user_id: string;
  scope: string;
  noticed_until: EpochMillis;
}

/** Each time a conversation was handed to a person, until taken or closed, with its operators' notices (see migration 0027). */
export interface HandoffsTable {
  id: string;
  session_id: string;
  user_id: string;
  reason: string;
  source: string;
  requested_at: EpochMillis;
  /** The session's id while open, null after: one open handoff per conversation (a unique index). */
  open_key: string | null;
  taken_by: ColumnType<string | null, string | null | undefined, string | null>;
  taken_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  closed_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  closed_by: ColumnType<string | null, string | null | undefined, string | null>;
  /** Notice rounds claimed so far (each claimed by one process). */
  notices: ColumnType<number, number | undefined, number>;
  /** When the next notice round is due; null when nobody is to be told again (taken, closed, or repeats spent). */
  next_notice_at: ColumnType<number | string | null, number | null | undefined, number | null>;
}

/** Tool calls waiting for (or decided by) a person's approval (see migration 0030). */
export interface ToolApprovalsTable {
  id: string;
  turn_id: string;
  call_id: string;
  session_id: string;
  user_id: string;
  channel: string;
  conversation_id: string;
  account_id: string;
  account_namespace: string;
  conversation_kind: string;
  tool: string;
  arguments: string;
  summary: string;
  /** `person` or `operator`: who may decide. */
  decided_by_kind: string;
  language: string;
  /** `pending`, `approved`, `declined` or `expired`. */
  status: string;
  requested_at: EpochMillis;
  expires_at: EpochMillis;
  /** 1 once the person's unclear answer was met by asking again. */
  asked_again: ColumnType<number, number | undefined, number>;
  /** The turn's model calls billed when it stopped to ask. */
  model_calls: ColumnType<number, number | undefined, number>;
  decided_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  decided_by: ColumnType<string | null, string | null | undefined, string | null>;
  reason: ColumnType<string | null, string | null | undefined, string | null>;
}

/** Files attached to inbound messages, with their bytes (see migration 0025). */
export interface AttachmentsTable {
  id: string;
  channel: string;
  account_id: string;
  session_id: string;
  inbound_id: string;
  kind: string;
  mime_type: string;
  name: string;
  size: ColumnType<number | string, number, number>;
  bytes: Uint8Array;
  created_at: EpochMillis;
}

/** Messages stored without a turn (`ChannelContext.record`): one row per channel message id in a conversation. */
export interface RecordedMessagesTable {
  channel: string;
  conversation_id: string;
  /** The channel's id of the message: the dedupe key within the conversation. */
  message_id: string;
  session_id: string;
  /** The row in `messages` it was stored as. */
  stored_message_id: string;
  /** The conversation's person, as identity bound them when it was recorded. */
  account_namespace: string;
  account_id: string;
  user_id: string;
  recorded_at: EpochMillis;
}

/** The outbox: one row per part of a reply of a channel that delivers offline. */
export interface DeliveriesTable {
  id: string;
  session_id: string;
  reply_message_id: string;
  part: number;
  text: string;
  channel: string;
  conversation_id: string;
  account_id: string;
  /** JSON array of the channel message ids the reply answers. */
  in_reply_to: string;
  correlation_id: string;
  /** `pending` until the channel took it, then `sent` (or `failed` when the channel refused it for good). */
  state: ColumnType<string, string | undefined, string>;
  channel_message_id: string | null;
  error: string | null;
  owner: string | null;
  lease_until: EpochMillis;
  created_at: EpochMillis;
  sent_at: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** The channel message id a sent message quotes (replies as actions), or null. */
  reply_to: ColumnType<string | null, string | null | undefined, string | null>;
  /** Set for a reaction: the emoji, and the channel message id it goes on; null for a message. */
  reaction_emoji: ColumnType<string | null, string | null | undefined, string | null>;
  reaction_message_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The approval request a question part asks (JSON `DeliveryApproval`); null for any other part. */
  approval: ColumnType<string | null, string | null | undefined, string | null>;
}

/** Small values a channel keeps across restarts. */
export interface ChannelStateTable {
  channel: string;
  key: string;
  value: string;
  updated_at: EpochMillis;
}

/** An operator's dashboard sign-in: a digest of its cookie's nonce, and when it ends. */
export interface DashboardSessionsTable {
  id: string;
  created_at: EpochMillis;
  expires_at: EpochMillis;
  /** The operator signed in; null when signed in with the admin token. */
  operator_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A person who operates Palaver: a name, a role and the digest of their token. */
export interface OperatorsTable {
  id: string;
  name: string;
  /** `name` in lower case: unique, so names differ by more than case. */
  name_key: string;
  role: string;
  /** SHA-256 of the token (hex); the token itself is never stored. */
  token_digest: string;
  created_at: EpochMillis;
  disabled_at: ColumnType<number | string | null, number | null | undefined, number | null>;
}

/** A channel that runs in one process only, and the process holding it (`host:pid:instance`) until `expires_at`. */
export interface ChannelLeasesTable {
  channel: string;
  holder: string;
  acquired_at: EpochMillis;
  expires_at: EpochMillis;
}

/** Which process runs a conversation's turn now (see ConversationClaimRepository). */
export interface ConversationClaimsTable {
  channel: string;
  conversation_id: string;
  owner: string | null;
  previous_owner: string | null;
  token: ColumnType<number | string, number, number>;
  claimed_until: EpochMillis;
}

/** The Palaver processes on the database. */
export interface ProcessesTable {
  id: string;
  host: string;
  pid: ColumnType<number | string, number, number>;
  started_at: EpochMillis;
  heartbeat_at: EpochMillis;
}

/** The identity audit: phones set or taken, accounts relinked, links refused, admins' changes. */
export interface IdentityEventsTable {
  id: string;
  user_id: string;
  kind: string;
  channel: string | null;
  account_id: string | null;
  from_user_id: string | null;
  to_user_id: string | null;
  actor: string;
  /** JSON object. */
  details: string;
  created_at: EpochMillis;
  /** Order of writing (epoch microseconds, strictly increasing per writing process). */
  arrival: ColumnType<number | string, number, number>;
}

/** The operators' audit: what an operator did through the admin API, by whom, under which request. */
export interface AdminActionsTable {
  id: string;
  action: string;
  actor: string;
  request_id: string | null;
  /** A send's `Idempotency-Key`: unique, so a repeated request finds the first one's row. */
  idempotency_key: string | null;
  session_id: string | null;
  user_id: string | null;
  /** JSON object. */
  details: string;
  created_at: EpochMillis;
  /** Order of writing (epoch microseconds, strictly increasing per writing process). */
  arrival: ColumnType<number | string, number, number>;
  /** The operator account that acted; null for the admin token (whose actor is only what the client said). */
  operator_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** Kysely's own bookkeeping, declared so the migration tables can be inspected with typed queries. */
export interface KyselyMigrationTable {
  name: string;
  timestamp: string;
}

export interface KyselyMigrationLockTable {
  id: string;
  is_locked: Generated<number>;
}

/** One version of a conversation's summary (see migration 0029); rows are only inserted. */
export interface ConversationSummariesTable {
  id: string;
  session_id: string;
  /** 1, 2, … per session (unique with it). */
  version: number;
  /** The session's `context_since_seq` when it was written: it covers the display messages after this seq… */
  from_seq: ColumnType<number | string, number, number>;
  /** …up to and including this one. */
  to_seq: ColumnType<number | string, number, number>;
  text: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  cost: DecimalText;
  currency: string;
  created_at: EpochMillis;
}

/** Who may write a session's next summary, and until when (epoch ms); `claim_id` null when nobody holds it. */
export interface SummaryClaimsTable {
  session_id: string;
  claim_id: string | null;
  owner: string | null;
  expires_at: EpochMillis;
}
