import type { DeliveryApproval } from '../../domain/approval.js';
import { sql, type ExpressionBuilder, type Selectable } from 'kysely';
import { newId } from '../../domain/ids.js';
import type { DeliveryRecord, DeliveryRepository } from '../../domain/ports/store.js';
import { claimExpired, renewLeases, type ExpiredRowProbe } from './leases.js';
import { prepared } from './prepared-query.js';
import type { RepositoryContext } from './repository-context.js';
import type { DeliveriesTable } from './schema.js';
import { storeOperation } from './store-errors.js';

/** The outbox (see the port). */
export class KyselyDeliveryRepository implements DeliveryRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  add(
    parts: readonly Omit<DeliveryRecord, 'id' | 'state' | 'channelMessageId'>[],
    lease: { readonly owner: string; readonly leaseMs: number },
  ): Promise<DeliveryRecord[]> {
    return storeOperation('deliveries.add', async () => {
      if (parts.length === 0) return [];
      const now = this.#ctx.now();
      const rows = parts.map((part) => ({
        id: newId(),
        session_id: part.sessionId,
        reply_message_id: part.replyMessageId,
        part: part.part,
        text: part.text,
        channel: part.channel,
        conversation_id: part.conversationId,
        account_id: part.accountId,
        in_reply_to: JSON.stringify(part.inReplyTo),
        correlation_id: part.correlationId,
        reply_to: part.replyTo ?? null,
        reaction_emoji: part.reaction?.emoji ?? null,
        reaction_message_id: part.reaction?.messageId ?? null,
        approval: part.approval ? JSON.stringify(part.approval) : null,
        owner: lease.owner,
        lease_until: now + lease.leaseMs,
        created_at: now,
      }));
      await this.#ctx.db.insertInto('deliveries').values(rows).execute();
      return rows.map((row) => toDelivery({ ...row, state: 'pending', channel_message_id: null, error: null, sent_at: null }));
    });
  }

  markSent(id: string, channelMessageId: string): Promise<void> {
    return storeOperation('deliveries.markSent', async () => {
      await this.#ctx.db
        .updateTable('deliveries')
        .set({ state: 'sent', channel_message_id: channelMessageId, sent_at: this.#ctx.now(), owner: null })
        .where('id', '=', id)
        .execute();
    });
  }

  markFailed(id: string, error: string): Promise<void> {
    return storeOperation('deliveries.markFailed', async () => {
      await this.#ctx.db
        .updateTable('deliveries')
        .set({ state: 'failed', error: error.slice(0, 2000), owner: null })
        .where('id', '=', id)
        .execute();
    });
  }

  renewLeases(owner: string, leaseMs: number): Promise<number> {
    return storeOperation('deliveries.renewLeases', () => renewLeases(this.#ctx.db, 'deliveries', owner, this.#ctx.now() + leaseMs));
  }

  postpone(ids: readonly string[], delayMs: number): Promise<void> {
    return storeOperation('deliveries.postpone', async () => {
      if (ids.length === 0) return;
      // No owner: nobody renews the lease, so it runs out at the given time and recovery takes the part.
      await this.#ctx.db
        .updateTable('deliveries')
        .set({ owner: null, lease_until: this.#ctx.now() + Math.max(0, Math.ceil(delayMs)) })
        .where('id', 'in', [...ids])
        .where('state', '=', 'pending')
        .execute();
    });
  }

  queuedAhead(input: { readonly channel: string; readonly conversationId: string; readonly replyMessageId: string }): Promise<number | undefined> {
    return storeOperation('deliveries.queuedAhead', async () => {
      const row = await this.#ctx.db
        .selectFrom('deliveries')
        // Only a postponed part (leased to nobody) has a time to wait for; the others are due or being sent.
        .select((eb) => [eb.fn.countAll().as('parts'), eb.fn.max(eb.case().when('owner', 'is', null).then(eb.ref('lease_until')).else(0).end()).as('until')])
        .where('state', '=', 'pending')
        .where('channel', '=', input.channel)
        .where('conversation_id', '=', input.conversationId)
        .where('reply_message_id', '<>', input.replyMessageId)
        .executeTakeFirst();
      if (!row || Number(row.parts) === 0) return undefined;
      return Math.max(0, Number(row.until ?? 0) - this.#ctx.now());
    });
  }

  listForReply(replyMessageId: string): Promise<DeliveryRecord[]> {
    return storeOperation('deliveries.listForReply', async () => {
      const rows = await this.#ctx.db.selectFrom('deliveries').selectAll().where('reply_message_id', '=', replyMessageId).orderBy('part').execute();
      return rows.map(toDelivery);
    });
  }

  claimExpired(input: { readonly owner: string; readonly leaseMs: number; readonly channels: readonly string[]; readonly limit: number }) {
    return storeOperation('deliveries.claimExpired', async () => {
      if (input.channels.length === 0 || input.limit <= 0) return [];
      const now = this.#ctx.now();
      const rows = await claimExpired(this.#ctx.db, this.#ctx.dialect, 'deliveries', {
        ...input,
        now,
        leaseUntil: now + input.leaseMs,
        order: ['created_at', 'reply_message_id', 'part'],
        probe: anyExpiredPart,
        narrow: (select) => select.where((eb) => eb.not(eb.exists(earlierPostponed(eb, now)))),
      });
      return rows.map(toDelivery);
    });
  }
}

/** See `ExpiredRowProbe`: a pending part whose lease ran out (a postponed part's lease is its retry time). */
const anyExpiredPart: ExpiredRowProbe = prepared((db, $: { now: number }) =>
  db.selectFrom('deliveries').select('id').where('state', '=', 'pending').where('lease_until', '<', $.now).limit(1),
);

/**
 * A part of the same conversation, before this one in claim order (created, reply, part), that is postponed and whose
 * time has not come: this one waits behind it.
 */
function earlierPostponed(eb: ExpressionBuilder<any, any>, now: number) {
  return eb
    .selectFrom('deliveries as earlier')
    .select(sql.lit(1).as('one'))
    .where('earlier.state', '=', 'pending')
    .where('earlier.owner', 'is', null)
    .where('earlier.lease_until', '>=', now)
    .whereRef('earlier.channel', '=', 'deliveries.channel')
    .whereRef('earlier.conversation_id', '=', 'deliveries.conversation_id')
    .where((inner) =>
      inner.or([
        inner('earlier.created_at', '<', inner.ref('deliveries.created_at')),
        inner.and([
          inner('earlier.created_at', '=', inner.ref('deliveries.created_at')),
          inner.or([
            inner('earlier.reply_message_id', '<', inner.ref('deliveries.reply_message_id')),
            inner.and([
              inner('earlier.reply_message_id', '=', inner.ref('deliveries.reply_message_id')),
              inner('earlier.part', '<', inner.ref('deliveries.part')),
            ]),
          ]),
        ]),
      ]),
    );
}

function toDelivery(row: Selectable<DeliveriesTable>): DeliveryRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    replyMessageId: row.reply_message_id,
    part: Number(row.part),
    text: row.text,
    channel: row.channel,
    conversationId: row.conversation_id,
    accountId: row.account_id,
    inReplyTo: JSON.parse(row.in_reply_to) as string[],
    correlationId: row.correlation_id,
    replyTo: row.reply_to ?? null,
    reaction: row.reaction_emoji === null || row.reaction_message_id === null ? null : { emoji: row.reaction_emoji, messageId: row.reaction_message_id },
    approval: row.approval === null ? null : (JSON.parse(row.approval) as DeliveryApproval),
    state: row.state === 'sent' ? 'sent' : row.state === 'failed' ? 'failed' : 'pending',
    channelMessageId: row.channel_message_id,
  };
}
