import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import { StoreError } from '../../domain/errors.js';
import type { Audience, MessageRole, SessionStatus, ToolCallRef } from '../../domain/model.js';
import { compareCosts, sumCosts } from '../../domain/money.js';
import type {
  ConversationListQuery,
  ConversationOverview,
  CostQuery,
  CostRecord,
  CostReport,
  LiveTurnRecord,
  LiveTurnState,
  MoneyAmount,
  ModelUsageRecord,
  OperatorPage,
  OperatorQueries,
  QueueDepth,
  SummaryOverview,
  TranscriptRecord,
  UserListQuery,
  UserOverview,
} from '../../domain/ports/operator-queries.js';
import type { HandoffSource } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { toDate } from './rows.js';
import { storeOperation } from './store-errors.js';
import { toSummary } from './summary-repository.js';

/** How much of a conversation's last message its list entry carries. */
const LAST_MESSAGE_CHARS = 280;
const DAY_MS = 86_400_000;

/** The operators' read model on every dialect: written once against Kysely, exact sums from the dialect. */
export class KyselyOperatorQueries implements OperatorQueries {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  users(query: UserListQuery): Promise<OperatorPage<UserOverview>> {
    return storeOperation('operators.users', async () => {
      const { db, dialect } = this.#ctx;
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      const q = query.q?.trim();
      let select = db
        .selectFrom('users as u')
        .leftJoin('user_state as st', 'st.user_id', 'u.id')
        .select(['u.id', 'u.display_name', 'u.phone', 'u.created_at', 'st.data as state'])
        .select((eb) => [
          eb
            .selectFrom('sessions as s')
            .select((sb) => sb.fn.countAll<number | string>().as('n'))
            .whereRef('s.user_id', '=', 'u.id')
            .as('conversations'),
          eb
            .selectFrom('sessions as s')
            .select((sb) => sb.fn.max('s.updated_at').as('m'))
            .whereRef('s.user_id', '=', 'u.id')
            .as('last_active'),
        ]);
      if (q) {
        const pattern = containing(q);
        // A phone is searched by its digits however the operator typed it ("+380 67-123").
        const digits = q.replace(/[\s\-+().]/g, '');
        select = select.where((eb) =>
          eb.or([
            sql<SqlBool>`lower(u.display_name) like ${pattern} escape '!'`,
            eb.exists(
              eb
                .selectFrom('channel_accounts as a')
                .select('a.user_id')
                .whereRef('a.user_id', '=', 'u.id')
                .where(sql<SqlBool>`lower(a.account_id) like ${pattern} escape '!'`),
            ),
            ...(/^\d+$/.test(digits) ? [eb('u.phone', 'like', `%${digits}%`)] : []),
          ]),
        );
      }
      if (after) select = select.where((eb) => before(eb, 'u.created_at', 'u.id', after));
      const rows = await select
        .orderBy('u.created_at', 'desc')
        .orderBy('u.id', 'desc')
        .limit(query.limit + 1)
        .execute();
      const page = rows.slice(0, query.limit);
      const ids = page.map((row) => row.id);
      const accounts =
        ids.length === 0
          ? []
          : await db
              .selectFrom('channel_accounts')
              .select(['user_id', 'channel', 'account_id'])
              .where('user_id', 'in', ids)
              .orderBy('created_at')
              .orderBy('channel')
              .orderBy('account_id')
              .execute();
      const costs =
        ids.length === 0
          ? []
          : await db
              .selectFrom('sessions')
              .select(['user_id', 'currency'])
              .select((eb) => [dialect.sumMoney(sql.ref('cost')).as('cost'), eb.fn.max('updated_at').as('latest')])
              .where('user_id', 'in', ids)
              .groupBy(['user_id', 'currency'])
              .execute();
      const items = page.map(
        (row): UserOverview => ({
          id: row.id,
          displayName: row.display_name,
          phone: row.phone,
          stateJson: row.state ?? null,
          accounts: accounts.filter((account) => account.user_id === row.id).map((account) => ({ channel: account.channel, accountId: account.account_id })),
          conversations: Number(row.conversations ?? 0),
          costs: costs
            .filter((cost) => cost.user_id === row.id)
            .sort((a, b) => Number(b.latest) - Number(a.latest))
            .map((cost) => ({ currency: cost.currency, cost: dialect.readMoneySum(cost.cost) })),
          createdAt: toDate(row.created_at),
          lastActiveAt: row.last_active == null ? null : toDate(row.last_active),
        }),
      );
      const last = page[page.length - 1];
      return { items, nextCursor: rows.length > query.limit && last ? encodeCursor(last.created_at, last.id) : null };
    });
  }

  conversations(query: ConversationListQuery): Promise<OperatorPage<ConversationOverview>> {
    return storeOperation('operators.conversations', async () => {
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      const q = query.q?.trim();
      let select = this.#sessions();
      if (query.channel !== undefined) select = select.where('s.channel', '=', query.channel);
      if (query.userId !== undefined) select = select.where('s.user_id', '=', query.userId);
      if (query.status !== undefined) select = select.where('s.status', '=', query.status);
      if (query.paused !== undefined) select = select.where('s.paused_at', query.paused ? 'is not' : 'is', null);
      if (q) {
        const pattern = containing(q);
        select = select.where((eb) =>
          eb.or([
            sql<SqlBool>`lower(s.title) like ${pattern} escape '!'`,
            sql<SqlBool>`lower(s.conversation_id) like ${pattern} escape '!'`,
            sql<SqlBool>`lower(u.display_name) like ${pattern} escape '!'`,
            eb('s.id', '=', q),
          ]),
        );
      }
      if (after) select = select.where((eb) => before(eb, 's.updated_at', 's.id', after));
      const rows = await select
        .orderBy('s.updated_at', 'desc')
        .orderBy('s.id', 'desc')
        .limit(query.limit + 1)
        .execute();
      const page = rows.slice(0, query.limit);
      const items = await this.#overviews(page);
      const last = page[page.length - 1];
      return { items, nextCursor: rows.length > query.limit && last ? encodeCursor(last.updated_at, last.id) : null };
    });
  }

  conversation(sessionId: string): Promise<ConversationOverview | undefined> {
    return storeOperation('operators.conversation', async () => {
      const rows = await this.#sessions().where('s.id', '=', sessionId).execute();
      return (await this.#overviews(rows))[0];
    });
  }

  transcript(sessionId: string, options: { readonly audit: boolean; readonly limit: number }): Promise<TranscriptRecord[]> {
    return storeOperation('operators.transcript', async () => {
      let select = this.#ctx.db
        .selectFrom('messages')
        .select(['id', 'seq', 'role', 'audience', 'content', 'tool_calls', 'model', 'cost', 'correlation_id', 'meta', 'created_at'])
        .where('session_id', '=', sessionId);
      if (!options.audit) select = select.where('audience', '=', 'display');
      const rows = await select.orderBy('seq', 'desc').limit(options.limit).execute();
      return rows.reverse().map((row) => ({
        id: row.id,
        seq: Number(row.seq),
        role: row.role as MessageRole,
        audience: row.audience as Audience,
        content: row.content,
        toolCalls: row.tool_calls === null ? null : (JSON.parse(row.tool_calls) as ToolCallRef[]),
        model: row.model,
        cost: this.#ctx.dialect.readMoneySum(row.cost),
        correlationId: row.correlation_id,
        meta: row.meta === null ? null : (JSON.parse(row.meta) as Record<string, unknown>),
        createdAt: toDate(row.created_at),
      }));
    });
  }

  summaries(sessionId: string, limit: number): Promise<SummaryOverview[]> {
    return storeOperation('operators.summaries', async () => {
      const { db } = this.#ctx;
      const rows = await db
        .selectFrom('conversation_summaries')
        .selectAll()
        .where('session_id', '=', sessionId)
        .orderBy('version', 'desc')
        .limit(limit)
        .execute();
      const session = await db.selectFrom('sessions').select('context_since_seq').where('id', '=', sessionId).executeTakeFirst();
      const contextStart = Number(session?.context_since_seq ?? 0);
      // Newest first: the first written in the current context is the one turns read.
      const current = rows.find((row) => Number(row.from_seq) === contextStart)?.id;
      return rows.map((row) => ({ ...toSummary(row), current: row.id === current }));
    });
  }

  costs(query: CostQuery): Promise<CostReport> {
    return storeOperation('operators.costs', async () => {
      const { db, dialect } = this.#ctx;
      const key =
        query.by === 'day' ? dialect.epochDay(sql.ref('m.created_at'), DAY_MS) : query.by === 'user' ? sql<string>`s.user_id` : sql<string>`m.session_id`;
      let select = db
        .selectFrom('messages as m')
        .innerJoin('sessions as s', 's.id', 'm.session_id')
        .select([key.as('key'), 'm.currency', 'm.model'])
        .select((eb) => [
          eb.fn.sum<number | string>('m.input_tokens').as('input_tokens'),
          eb.fn.sum<number | string>('m.output_tokens').as('output_tokens'),
          eb.fn.sum<number | string>('m.cached_input_tokens').as('cached_input_tokens'),
          eb.fn.countAll<number | string>().as('turns'),
          dialect.sumMoney(sql.ref('m.cost')).as('cost'),
        ])
        // A turn's usage and cost are on its reply; replies that called no model (a reset, an operator's) cost nothing.
        .where('m.role', '=', 'assistant')
        .where('m.audience', '=', 'display')
        .where((eb) => eb.or([eb('m.model', 'is not', null), eb('m.input_tokens', '>', 0), eb('m.output_tokens', '>', 0)]));
      if (query.from !== undefined) select = select.where('m.created_at', '>=', query.from.getTime());
      if (query.to !== undefined) select = select.where('m.created_at', '<', query.to.getTime());
      if (query.userId !== undefined) select = select.where('s.user_id', '=', query.userId);
      if (query.sessionId !== undefined) select = select.where('m.session_id', '=', query.sessionId);
      const groups = await select.groupBy([key, 'm.currency', 'm.model']).execute();
      // Conversation summaries (agent.memory.summarize) are paid for too: their calls count under their model, not as turns.
      const summaryKey =
        query.by === 'day' ? dialect.epochDay(sql.ref('c.created_at'), DAY_MS) : query.by === 'user' ? sql<string>`s.user_id` : sql<string>`c.session_id`;
      let summaries = db
        .selectFrom('conversation_summaries as c')
        .innerJoin('sessions as s', 's.id', 'c.session_id')
        .select([summaryKey.as('key'), 'c.currency', 'c.model'])
        .select((eb) => [
          eb.fn.sum<number | string>('c.input_tokens').as('input_tokens'),
          eb.fn.sum<number | string>('c.output_tokens').as('output_tokens'),
          dialect.sumMoney(sql.ref('c.cost')).as('cost'),
        ]);
      if (query.from !== undefined) summaries = summaries.where('c.created_at', '>=', query.from.getTime());
      if (query.to !== undefined) summaries = summaries.where('c.created_at', '<', query.to.getTime());
      if (query.userId !== undefined) summaries = summaries.where('s.user_id', '=', query.userId);
      if (query.sessionId !== undefined) summaries = summaries.where('c.session_id', '=', query.sessionId);
      const summaryGroups = await summaries.groupBy([summaryKey, 'c.currency', 'c.model']).execute();

      const byKey = new Map<string, { key: string; currency: string; models: ModelUsageRecord[]; turns: number }>();
      const add = (
        group: { key: unknown; currency: string; model: string | null; cost: unknown },
        usage: Omit<ModelUsageRecord, 'model' | 'cost'>,
        turns: number,
      ) => {
        const rowKey = query.by === 'day' ? dayOf(Number(group.key)) : String(group.key);
        const id = `${rowKey}\u0000${group.currency}`;
        let row = byKey.get(id);
        if (row === undefined) byKey.set(id, (row = { key: rowKey, currency: group.currency, models: [], turns: 0 }));
        row.turns += turns;
        const model = group.model ?? 'unknown';
        const cost = dialect.readMoneySum(group.cost as string | null);
        const index = row.models.findIndex((entry) => entry.model === model);
        const earlier = row.models[index];
        if (earlier === undefined) row.models.push({ model, ...usage, cost });
        else
          row.models[index] = {
            model,
            inputTokens: earlier.inputTokens + usage.inputTokens,
            outputTokens: earlier.outputTokens + usage.outputTokens,
            cachedInputTokens: earlier.cachedInputTokens + usage.cachedInputTokens,
            cost: sumCosts([earlier.cost, cost]),
          };
      };
      for (const group of groups) {
        const usage = {
          inputTokens: Number(group.input_tokens),
          outputTokens: Number(group.output_tokens),
          cachedInputTokens: Number(group.cached_input_tokens),
        };
        add(group, usage, Number(group.turns));
      }
      for (const group of summaryGroups)
        add(group, { inputTokens: Number(group.input_tokens), outputTokens: Number(group.output_tokens), cachedInputTokens: 0 }, 0);
      const all = [...byKey.values()].map(
        (row): Omit<CostRecord, 'label'> => ({
          key: row.key,
          currency: row.currency,
          cost: sumCosts(row.models.map((model) => model.cost)),
          inputTokens: row.models.reduce((sum, model) => sum + model.inputTokens, 0),
          outputTokens: row.models.reduce((sum, model) => sum + model.outputTokens, 0),
          turns: row.turns,
          models: row.models.sort((a, b) => a.model.localeCompare(b.model)),
        }),
      );
      const totals = totalsOf(all);
      let rows: Omit<CostRecord, 'label'>[];
      if (query.by === 'day') {
        // The latest days, in calendar order.
        rows = all
          .sort((a, b) => b.key.localeCompare(a.key) || b.currency.localeCompare(a.currency))
          .slice(0, query.limit)
          .reverse();
      } else {
        rows = all.sort((a, b) => compareCosts(b.cost, a.cost) || a.key.localeCompare(b.key) || a.currency.localeCompare(b.currency)).slice(0, query.limit);
      }
      const labels = await this.#labels(
        query.by,
        rows.map((row) => row.key),
      );
      return { rows: rows.map((row) => ({ ...row, label: labels.get(row.key) ?? null })), totals };
    });
  }

  liveTurns(): Promise<LiveTurnRecord[]> {
    return storeOperation('operators.liveTurns', async () => {
      const rows = await this.#ctx.db
        .selectFrom(this.#waitingMessages().as('w'))
        .select(['w.session_id', 'w.channel', 'w.conversation_id', 'w.user_id', 'w.state'])
        .select((eb) => [eb.fn.countAll<number | string>().as('messages'), eb.fn.min('w.received_at').as('oldest')])
        .groupBy(['w.session_id', 'w.channel', 'w.conversation_id', 'w.user_id', 'w.state'])
        .execute();
      return rows
        .map((row) => ({
          sessionId: row.session_id,
          channel: row.channel,
          conversationId: row.conversation_id,
          userId: row.user_id,
          state: row.state as LiveTurnState,
          messages: Number(row.messages),
          oldestAt: toDate(row.oldest),
        }))
        .sort((a, b) => a.oldestAt.getTime() - b.oldestAt.getTime() || a.sessionId.localeCompare(b.sessionId) || a.state.localeCompare(b.state));
    });
  }

  depth(): Promise<QueueDepth> {
    return storeOperation('operators.depth', async () => {
      const { db } = this.#ctx;
      const inbox = await db
        .selectFrom(this.#waitingMessages().as('w'))
        .select(['w.state'])
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .groupBy('w.state')
        .execute();
      const outbox = await db
        .selectFrom('deliveries')
        .select(['state'])
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('state', 'in', ['pending', 'failed'])
        .groupBy('state')
        .execute();
      const count = (rows: readonly { state: string; n: number | string }[], state: string) => Number(rows.find((row) => row.state === state)?.n ?? 0);
      return {
        inbox: { waiting: count(inbox, 'waiting'), running: count(inbox, 'running'), paused: count(inbox, 'paused') },
        outbox: { pending: count(outbox, 'pending'), failed: count(outbox, 'failed') },
      };
    });
  }

  /** Sessions with their person's name and their count of messages waiting for an answer. */
  #sessions() {
    return this.#ctx.db
      .selectFrom('sessions as s')
      .innerJoin('users as u', 'u.id', 's.user_id')
      .select([
        's.id',
        's.channel',
        's.conversation_id',
        's.title',
        's.user_id',
        'u.display_name',
        's.status',
        's.paused_at',
        's.ended_at',
        's.assigned_to',
        's.cost',
        's.currency',
        's.input_tokens',
        's.output_tokens',
        's.created_at',
        's.updated_at',
      ])
      .select((eb) =>
        eb
          .selectFrom('inbound_messages as i')
          .select((ib) => ib.fn.countAll<number | string>().as('n'))
          .whereRef('i.session_id', '=', 's.id')
          .where('i.state', '=', 'queued')
          .as('waiting'),
      );
  }

  async #overviews(rows: readonly SessionRow[]): Promise<ConversationOverview[]> {
    const ids = rows.map((row) => row.id);
    const lastMessages =
      ids.length === 0
        ? []
        : await this.#ctx.db
            .selectFrom('messages as m')
            .select(['m.session_id', 'm.role', sql<string>`substr(m.content, 1, ${sql.lit(LAST_MESSAGE_CHARS)})`.as('text'), 'm.created_at'])
            .where('m.session_id', 'in', ids)
            .where((eb) =>
              eb(
                'm.seq',
                '=',
                eb
                  .selectFrom('messages as l')
                  .select((lb) => lb.fn.max('l.seq').as('seq'))
                  .whereRef('l.session_id', '=', 'm.session_id')
                  .where('l.audience', '=', 'display')
                  .where('l.role', 'in', ['user', 'assistant']),
              ),
            )
            .execute();
    const lastBySession = new Map(lastMessages.map((message) => [message.session_id, message]));
    // An open handoff's `open_key` is its session's id (a unique index): one lookup for the page.
    const handoffs =
      ids.length === 0
        ? []
        : await this.#ctx.db.selectFrom('handoffs').select(['open_key', 'reason', 'source', 'requested_at', 'taken_by']).where('open_key', 'in', ids).execute();
    const handoffBySession = new Map(handoffs.map((handoff) => [handoff.open_key, handoff]));
    return rows.map((row) => {
      const last = lastBySession.get(row.id);
      const handoff = handoffBySession.get(row.id);
      return {
        sessionId: row.id,
        channel: row.channel,
        conversationId: row.conversation_id,
        title: row.title,
        user: { id: row.user_id, displayName: row.display_name },
        status: row.status as SessionStatus,
        pausedAt: row.paused_at == null ? null : toDate(row.paused_at),
        endedAt: row.ended_at == null ? null : toDate(row.ended_at),
        assignedTo: row.assigned_to,
        handoff:
          handoff === undefined
            ? null
            : { reason: handoff.reason, source: handoff.source as HandoffSource, requestedAt: toDate(handoff.requested_at), takenBy: handoff.taken_by },
        lastMessage: last === undefined ? null : { role: last.role as 'user' | 'assistant', text: last.text, at: toDate(last.created_at) },
        waiting: Number(row.waiting ?? 0),
        cost: this.#ctx.dialect.readMoneySum(row.cost),
        currency: row.currency,
        inputTokens: Number(row.input_tokens),
        outputTokens: Number(row.output_tokens),
        createdAt: toDate(row.created_at),
        updatedAt: toDate(row.updated_at),
      };
    });
  }

  /**
   * Queued inbound messages, each with its live state: `running` while an open turn answers it or a live process holds
   * its lease (its turn is starting or under way: a turn's journal is written only past its first model call);
   * `paused` when an operator paused its conversation; else `waiting` (its process is gone, or a retry is due later).
   */
  #waitingMessages() {
    const now = this.#ctx.now();
    return this.#ctx.db
      .selectFrom('inbound_messages as i')
      .innerJoin('sessions as s', 's.id', 'i.session_id')
      .select(['i.session_id', 'i.channel', 'i.conversation_id', 'i.user_id', 'i.received_at'])
      .select((eb) =>
        eb
          .case()
          .when(eb.exists(eb.selectFrom('turn_messages as t').select('t.inbound_id').whereRef('t.inbound_id', '=', 'i.id')))
          .then(sql.lit<string>('running'))
          .when('s.paused_at', 'is not', null)
          .then(sql.lit<string>('paused'))
          .when(eb.and([eb('i.lease_until', '>', now), eb.or([eb('i.not_before', 'is', null), eb('i.not_before', '<=', now)])]))
          .then(sql.lit<string>('running'))
          .else(sql.lit<string>('waiting'))
          .end()
          .as('state'),
      )
      .where('i.state', '=', 'queued');
  }

  async #labels(by: CostQuery['by'], keys: readonly string[]): Promise<Map<string, string | null>> {
    if (by === 'day' || keys.length === 0) return new Map();
    const { db } = this.#ctx;
    if (by === 'user') {
      const users = await db
        .selectFrom('users')
        .select(['id', 'display_name'])
        .where('id', 'in', [...new Set(keys)])
        .execute();
      return new Map(users.map((user) => [user.id, user.display_name]));
    }
    const sessions = await db
      .selectFrom('sessions')
      .select(['id', 'title'])
      .where('id', 'in', [...new Set(keys)])
      .execute();
    return new Map(sessions.map((session) => [session.id, session.title]));
  }
}

/** A row of `#sessions()`. */
interface SessionRow {
  readonly id: string;
  readonly channel: string;
  readonly conversation_id: string;
  readonly title: string | null;
  readonly user_id: string;
  readonly display_name: string | null;
  readonly status: string;
  readonly paused_at: number | string | null;
  readonly ended_at: number | string | null;
  readonly assigned_to: string | null;
  readonly cost: string;
  readonly currency: string;
  readonly input_tokens: number | string;
  readonly output_tokens: number | string;
  readonly created_at: number | string;
  readonly updated_at: number | string;
  readonly waiting: number | string | null;
}

/** Per-currency totals of cost rows. */
function totalsOf(rows: readonly { readonly currency: string; readonly cost: string }[]): MoneyAmount[] {
  const byCurrency = new Map<string, string[]>();
  for (const row of rows) byCurrency.set(row.currency, [...(byCurrency.get(row.currency) ?? []), row.cost]);
  return [...byCurrency.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([currency, costs]) => ({ currency, cost: sumCosts(costs) }));
}

/** `YYYY-MM-DD` of a day number (days since the epoch, UTC). */
function dayOf(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/**
 * A LIKE pattern matching `q` anywhere, lower-cased, its wildcards escaped (`escape '!'`: a backslash would need
 * escaping itself in MySQL's string literals, and differently than in standard SQL).
 */
function containing(q: string): string {
  return `%${q.toLowerCase().replace(/[!%_]/g, (char) => `!${char}`)}%`;
}

/** Rows after the cursor in an order of (time desc, id desc). */
function before(eb: ExpressionBuilder<any, any>, timeColumn: string, idColumn: string, cursor: Cursor): Expression<SqlBool> {
  return eb.or([eb(timeColumn, '<', cursor.at), eb.and([eb(timeColumn, '=', cursor.at), eb(idColumn, '<', cursor.id)])]);
}

interface Cursor {
  readonly at: number;
  readonly id: string;
}

/** The place after a row, opaque to callers: its time and id. */
function encodeCursor(at: number | string, id: string): string {
  return Buffer.from(JSON.stringify([Number(at), id])).toString('base64url');
}

function decodeCursor(cursor: string): Cursor {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === 'string')
      return { at: value[0] as number, id: value[1] };
  } catch {
    // not ours: refused below
  }
  throw new StoreError('invalid_cursor', 'The cursor is not one this list handed out; start again without it.');
}
