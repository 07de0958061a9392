import { sql, type Selectable, type SelectQueryBuilder } from 'kysely';
import { newId } from '../../domain/ids.js';
import type { InboundRecord, NewInboundRecord } from '../../domain/model.js';
import type { InboundRepository } from '../../domain/ports/store.js';
import { nextArrival } from './arrival.js';
import { prepared } from './prepared-query.js';
import { claimExpired, renewLeases, type ExpiredRowProbe } from './leases.js';
import type { RepositoryContext } from './repository-context.js';
import { toDate } from './rows.js';
import type { InboundMessagesTable } from './schema.js';
import { parseAttachmentRefs } from './attachment-repository.js';
import { storeOperation } from './store-errors.js';

/** The durable inbox (see the port): accepted messages, their leases, and what answered them. */
export class KyselyInboundRepository implements InboundRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  /** One INSERT on the hot path; a redelivery (unique key per channel and conversation) costs a second read. */
  accept(message: NewInboundRecord, lease: { readonly owner: string; readonly leaseMs: number }) {
    return storeOperation('inbound.accept', async () => {
      const now = this.#ctx.now();
      const row = {
        id: newId(),
        channel: message.channel,
        conversation_id: message.conversationId,
        account_id: message.accountId,
        account_namespace: message.accountNamespace ?? message.channel,
        user_id: message.userId,
        session_id: message.sessionId,
        text: message.text,
        message_id: message.messageId,
        dedupe_key: message.dedupeKey,
        correlation_id: message.correlationId,
        language_hint: message.languageHint,
        display_name: message.displayName,
        conversation_kind: message.conversationKind,
        received_at: now,
        arrival: nextArrival(now),
        owner: lease.owner,
        lease_until: now + lease.leaseMs,
        attachments: message.attachments === undefined || message.attachments.length === 0 ? null : JSON.stringify(message.attachments),
      };
      if (message.dedupeKey === null) {
        await insertQuery.execute(this.#ctx.db, row);
        return {
          accepted: true as const,
          record: toInboundRecord({
            ...row,
            state: 'queued',
            attempts: 1,
            not_before: null,
            reply_message_id: null,
            reply_seq: null,
            answered_at: null,
            rate_limited: null,
          }),
        };
      }
      const result = await this.#ctx.dialect
        .insertOrIgnore(this.#ctx.db.insertInto('inbound_messages').values(row), ['channel', 'conversation_id', 'dedupe_key'])
        .executeTakeFirst();
      if (result.numInsertedOrUpdatedRows === 1n) {
        return {
          accepted: true as const,
          record: toInboundRecord({
            ...row,
            state: 'queued',
            attempts: 1,
            not_before: null,
            reply_message_id: null,
            reply_seq: null,
            answered_at: null,
            rate_limited: null,
          }),
        };
      }
      const existing = await this.#ctx.db
        .selectFrom('inbound_messages')
        .selectAll()
        .where('channel', '=', message.channel)
        .where('conversation_id', '=', message.conversationId)
        .where('dedupe_key', '=', message.dedupeKey)
        .executeTakeFirstOrThrow();
      if (existing.state === 'dropped') {
        // Its client left before it was answered and now sends it again: queued again, as if it had just come.
        const revived = { state: 'queued', owner: lease.owner, lease_until: now + lease.leaseMs, not_before: null, arrival: nextArrival(now) };
        const result = await this.#ctx.db
          .updateTable('inbound_messages')
          .set(revived)
          .where('id', '=', existing.id)
          .where('state', '=', 'dropped')
          .executeTakeFirst();
        if (result.numUpdatedRows === 1n) return { accepted: true as const, record: toInboundRecord({ ...existing, ...revived }) };
      }
      return { accepted: false as const, existing: toInboundRecord(existing) };
    });
  }

  markAnswered(ids: readonly string[], reply: { readonly id: string; readonly seq: number }): Promise<number> {
    return storeOperation('inbound.markAnswered', async () => {
      const now = this.#ctx.now();
      let marked = 0;
      for (const id of ids)
        marked += Number((await markAnsweredQuery.execute(this.#ctx.db, { id, replyId: reply.id, replySeq: reply.seq, now })).numAffectedRows ?? 0n);
      return marked;
    });
  }

  renewLeases(owner: string, leaseMs: number): Promise<number> {
    return storeOperation('inbound.renewLeases', () => renewLeases(this.#ctx.db, 'inbound_messages', owner, this.#ctx.now() + leaseMs));
  }

  claimExpired(input: {
    readonly owner: string;
    readonly leaseMs: number;
    readonly channels: readonly string[];
    readonly limit: number;
    readonly sessionId?: string;
  }) {
    return storeOperation('inbound.claimExpired', async () => {
      if (input.channels.length === 0 || input.limit <= 0) return [];
      const now = this.#ctx.now();
      const { sessionId } = input;
      const rows = await claimExpired(this.#ctx.db, this.#ctx.dialect, 'inbound_messages', {
        ...input,
        now,
        leaseUntil: now + input.leaseMs,
        order: ['arrival', 'id'],
        probe: anyExpiredMessage,
        // A paused session's messages wait for its resume, whoever looks.
        narrow: (select) => {
          const unpaused = select.where((eb) => eb.not(eb.exists(pausedSession((table) => eb.selectFrom(table)))));
          return sessionId === undefined ? unpaused : unpaused.where('session_id', '=', sessionId);
        },
      });
      return rows.map(toInboundRecord);
    });
  }

  hold(ids: readonly string[]): Promise<number> {
    return storeOperation('inbound.hold', async () => {
      if (ids.length === 0) return 0;
      const result = await this.#ctx.db
        .updateTable('inbound_messages')
        // A non-null not_before (due at once) tells the taker no turn took it: holding costs no attempt.
        .set({ owner: null, lease_until: 0, not_before: sql`coalesce(not_before, 0)` })
        .where('id', 'in', [...ids])
        .where('state', '=', 'queued')
        .where((eb) => eb.exists(pausedSession((table) => eb.selectFrom(table))))
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    });
  }

  retryLater(ids: readonly string[], delayMs: number): Promise<void> {
    return storeOperation('inbound.retryLater', async () => {
      if (ids.length === 0) return;
      const notBefore = this.#ctx.now() + delayMs;
      await this.#ctx.db
        .updateTable('inbound_messages')
        .set({ attempts: sql`attempts + 1`, not_before: notBefore })
        .where('id', 'in', [...ids])
        .where('state', '=', 'queued')
        .execute();
    });
  }

  markAbandoned(ids: readonly string[]): Promise<void> {
    return storeOperation('inbound.markAbandoned', async () => {
      if (ids.length === 0) return;
      await this.#ctx.db
        .updateTable('inbound_messages')
        .set({ state: 'abandoned', owner: null })
        .where('id', 'in', [...ids])
        .where('state', '=', 'queued')
        .execute();
    });
  }

  drop(ids: readonly string[], owner: string): Promise<number> {
    return storeOperation('inbound.drop', async () => {
      if (ids.length === 0) return 0;
      const result = await this.#ctx.db
        .updateTable('inbound_messages')
        .set({ state: 'dropped', owner: null })
        .where('id', 'in', [...ids])
        .where('state', '=', 'queued')
        .where('owner', '=', owner)
        .executeTakeFirst();
      const sessions = await this.#ctx.db
        .selectFrom('inbound_messages')
        .select('session_id')
        .distinct()
        .where('id', 'in', [...ids])
        .execute();
      for (const { session_id: sessionId } of sessions) {
        // Not `running` with nothing left to answer: what the sidebar and the dashboard show.
        await this.#ctx.db
          .updateTable('sessions')
          .set({ status: 'completed' })
          .where('id', '=', sessionId)
          .where('status', '=', 'running')
          .where((eb) =>
            eb.not(eb.exists(eb.selectFrom('inbound_messages').select(sql.lit(1).as('one')).where('session_id', '=', sessionId).where('state', '=', 'queued'))),
          )
          .execute();
      }
      return Number(result.numUpdatedRows);
    });
  }

  findByDedupeKey(channel: string, conversationId: string, dedupeKey: string): Promise<InboundRecord | undefined> {
    return storeOperation('inbound.findByDedupeKey', async () => {
      const row = await this.#ctx.db
        .selectFrom('inbound_messages')
        .selectAll()
        .where('channel', '=', channel)
        .where('conversation_id', '=', conversationId)
        .where('dedupe_key', '=', dedupeKey)
        .executeTakeFirst();
      return row === undefined ? undefined : toInboundRecord(row);
    });
  }

  listQueued(sessionId: string): Promise<InboundRecord[]> {
    return storeOperation('inbound.listQueued', async () => {
      const rows = await this.#ctx.db
        .selectFrom('inbound_messages')
        .selectAll()
        .where('session_id', '=', sessionId)
        .where('state', '=', 'queued')
        .orderBy('arrival')
        .orderBy('id')
        .execute();
      return rows.map(toInboundRecord);
    });
  }
}

const insertQuery = prepared(
  (
    db,
    $: {
      id: string;
      channel: string;
      conversation_id: string;
      account_id: string;
      account_namespace: string;
      user_id: string;
      session_id: string;
      text: string;
      message_id: string | null;
      dedupe_key: string | null;
      correlation_id: string;
      language_hint: string | null;
      display_name: string | null;
      conversation_kind: string;
      received_at: number;
      arrival: number;
      owner: string;
      lease_until: number;
      attachments: string | null;
    },
  ) =>
    // Named one by one: a prepared query reads its arguments field by field.
    db.insertInto('inbound_messages').values({
      id: $.id,
      channel: $.channel,
      conversation_id: $.conversation_id,
      account_id: $.account_id,
      account_namespace: $.account_namespace,
      user_id: $.user_id,
      session_id: $.session_id,
      text: $.text,
      message_id: $.message_id,
      dedupe_key: $.dedupe_key,
      correlation_id: $.correlation_id,
      language_hint: $.language_hint,
      display_name: $.display_name,
      conversation_kind: $.conversation_kind,
      received_at: $.received_at,
      arrival: $.arrival,
      owner: $.owner,
      lease_until: $.lease_until,
      attachments: $.attachments,
    }),
);

const markAnsweredQuery = prepared((db, $: { id: string; replyId: string; replySeq: number; now: number }) =>
  // Only a message still waiting: one answered already (by another process's turn) is not answered again.
  db
    .updateTable('inbound_messages')
    .set({ state: 'answered', reply_message_id: $.replyId, reply_seq: $.replySeq, answered_at: $.now, owner: null })
    .where('id', '=', $.id)
    .where('state', '=', 'queued'),
);

/** See `ExpiredRowProbe`: a queued message whose lease ran out, due, and not held for a paused conversation. */
const anyExpiredMessage: ExpiredRowProbe = prepared((db, $: { now: number }) =>
  db
    .selectFrom('inbound_messages')
    .select('id')
    .where('state', '=', 'queued')
    .where('lease_until', '<', $.now)
    .where((eb) =>
      eb.and([eb.or([eb('not_before', 'is', null), eb('not_before', '<=', $.now)]), eb.not(eb.exists(pausedSession((table) => eb.selectFrom(table))))]),
    )
    .limit(1),
);

/** The message's session, when it is paused (a correlated subquery on `inbound_messages.session_id`). */
function pausedSession(selectFrom: (table: 'sessions') => SelectQueryBuilder<any, any, any>) {
  return (
    selectFrom('sessions')
      .select(sql.lit(1).as('one'))
      .whereRef('sessions.id', '=', 'inbound_messages.session_id')
      // Paused by an operator, or a turn of it waiting for a tool call's approval.
      .where((eb) => eb.or([eb('sessions.paused_at', 'is not', null), eb('sessions.approval_pending_at', 'is not', null)]))
  );
}

function toInboundRecord(row: Selectable<InboundMessagesTable>): InboundRecord {
  return {
    id: row.id,
    channel: row.channel,
    conversationId: row.conversation_id,
    accountId: row.account_id,
    accountNamespace: row.account_namespace ?? row.channel,
    userId: row.user_id,
    sessionId: row.session_id,
    text: row.text,
    messageId: row.message_id,
    dedupeKey: row.dedupe_key,
    correlationId: row.correlation_id,
    languageHint: row.language_hint,
    displayName: row.display_name,
    conversationKind: row.conversation_kind === 'shared' ? 'shared' : 'direct',
    receivedAt: toDate(row.received_at),
    state: row.state === 'answered' || row.state === 'abandoned' || row.state === 'dropped' ? row.state : 'queued',
    attempts: Number(row.attempts),
    replyMessageId: row.reply_message_id,
    replySeq: row.reply_seq === null ? null : Number(row.reply_seq),
    ...(row.attachments ? { attachments: parseAttachmentRefs(row.attachments) } : {}),
    ...(row.rate_limited === 'notice' || row.rate_limited === 'silent' ? { rateLimited: row.rate_limited } : {}),
  };
}
