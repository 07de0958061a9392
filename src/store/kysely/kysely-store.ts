import { sql, type Kysely } from 'kysely';
import { StoreError } from '../../domain/errors.js';
import type { Store } from '../../domain/ports/store.js';
import { dialectOf, dialectSql } from '../dialect-sql.js';
import { bindStrategy, type DialectStrategy, type StoreDialect } from './dialect-strategy.js';
import { KyselyChannelLeaseRepository } from './channel-lease-repository.js';
import { KyselyConversationClaimRepository } from './conversation-claim-repository.js';
import { KyselyProcessRepository } from './process-repository.js';
import { KyselyChannelStateRepository } from './channel-state-repository.js';
import { KyselyDeliveryRepository } from './delivery-repository.js';
import { KyselyFocusRepository } from './focus-repository.js';
import { KyselyAdminActionRepository } from './admin-action-repository.js';
import { KyselyDashboardSessionRepository } from './dashboard-session-repository.js';
import { KyselyApprovalRepository } from './approval-repository.js';
import { KyselyHandoffRepository } from './handoff-repository.js';
import { KyselyOperatorAccountRepository } from './operator-account-repository.js';
import { KyselySummaryRepository } from './summary-repository.js';
import { KyselyIdentityEventRepository } from './identity-event-repository.js';
import { KyselySpendRepository } from './spend-repository.js';
import { KyselyPersonRateRepository } from './person-rate-repository.js';
import { KyselyInboundRepository } from './inbound-repository.js';
import { KyselyAttachmentRepository } from './attachment-repository.js';
import { KyselyMessageRepository } from './message-repository.js';
import { KyselyOperatorQueries } from './operator-queries.js';
import { KyselyProfileRepository } from './profile-repository.js';
import { KyselyRecordedMessageRepository } from './recorded-message-repository.js';
import type { RepositoryContext } from './repository-context.js';
import type { Database } from './schema.js';
import { KyselySessionRepository } from './session-repository.js';
import { retryingDeadlocks, storeOperation, toStoreError } from './store-errors.js';
import { engineOf, type StoreEngine } from './store-engine.js';
import { KyselyToolCallRepository } from './tool-call-repository.js';
import { KyselyToolOutboxRepository } from './tool-outbox-repository.js';
import { KyselyTurnRepository } from './turn-repository.js';
import { KyselyUserRepository } from './user-repository.js';
import { KyselyUserStateRepository } from './user-state-repository.js';

/** Options of {@link KyselyStore}. */
export interface KyselyStoreOptions {
  /**
   * Overrides detection from the Kysely adapter: a dialect name for a custom Kysely dialect that speaks SQLite or
   * PostgreSQL SQL, or a strategy of its own.
   */
  readonly dialect?: StoreDialect | DialectStrategy;
  /** Clock in epoch milliseconds; defaults to `Date.now`. */
  readonly now?: () => number;
  /**
   * A second, small pool on the same database for the heartbeat ({@link Store.heartbeat}); closed with the store.
   * Without it the heartbeat shares the store's own.
   */
  readonly heartbeatDb?: Kysely<Database>;
}

/**
 * The `Store` on any migrated `Kysely<Database>` (SQLite, PostgreSQL or MariaDB/MySQL). Owns `db`: `close()` destroys it.
 *
 * @example
 * const store = new KyselyStore(db);
 * await store.transaction(async (tx) => {
 *   const session = await tx.sessions.open({ userId, channel: 'console', conversationId: 'console' });
 *   await tx.messages.append(session.id, [{ role: 'user', audience: 'display', content: 'hi' }]);
 * });
 */
export class KyselyStore implements Store {
  readonly users: KyselyUserRepository;
  readonly sessions: KyselySessionRepository;
  readonly messages: KyselyMessageRepository;
  readonly userState: KyselyUserStateRepository;
  readonly toolCalls: KyselyToolCallRepository;
  readonly toolOutbox: KyselyToolOutboxRepository;
  readonly turns: KyselyTurnRepository;
  readonly inbound: KyselyInboundRepository;
  readonly attachments: KyselyAttachmentRepository;
  readonly recorded: KyselyRecordedMessageRepository;
  readonly deliveries: KyselyDeliveryRepository;
  readonly channelState: KyselyChannelStateRepository;
  readonly channelLeases: KyselyChannelLeaseRepository;
  readonly claims: KyselyConversationClaimRepository;
  readonly processes: KyselyProcessRepository;
  readonly focus: KyselyFocusRepository;
  readonly identityEvents: KyselyIdentityEventRepository;
  readonly adminActions: KyselyAdminActionRepository;
  readonly dashboardSessions: KyselyDashboardSessionRepository;
  readonly handoffs: KyselyHandoffRepository;
  readonly approvals: KyselyApprovalRepository;
  readonly operatorAccounts: KyselyOperatorAccountRepository;
  readonly summaries: KyselySummaryRepository;
  readonly spend: KyselySpendRepository;
  readonly personRate: KyselyPersonRateRepository;
  readonly profiles: KyselyProfileRepository;
  readonly operators: KyselyOperatorQueries;
  readonly heartbeat: KyselyStore;
  readonly #ctx: RepositoryContext;
  readonly #engine: StoreEngine | undefined;
  /** The store handed to transactions run by the database's engine, on the engine's transaction-bound Kysely. */
  #engineTxStore: KyselyStore | undefined;
  #closed = false;

  constructor(db: Kysely<Database>, options: KyselyStoreOptions = {}) {
    const chosen = options.dialect ?? dialectOf(db);
    const dialect = typeof chosen === 'string' ? dialectSql(chosen).strategy : chosen;
    bindStrategy(db, dialect);
    this.#ctx = { db, dialect, costSql: dialect.costSql(db), now: options.now ?? Date.now };
    this.#engine = engineOf(db);
    this.users = new KyselyUserRepository(this.#ctx);
    this.sessions = new KyselySessionRepository(this.#ctx);
    this.messages = new KyselyMessageRepository(this.#ctx);
    this.userState = new KyselyUserStateRepository(this.#ctx);
    this.toolCalls = new KyselyToolCallRepository(this.#ctx);
    this.toolOutbox = new KyselyToolOutboxRepository(this.#ctx);
    this.turns = new KyselyTurnRepository(this.#ctx);
    this.inbound = new KyselyInboundRepository(this.#ctx);
    this.attachments = new KyselyAttachmentRepository(this.#ctx);
    this.recorded = new KyselyRecordedMessageRepository(this.#ctx);
    this.deliveries = new KyselyDeliveryRepository(this.#ctx);
    this.channelState = new KyselyChannelStateRepository(this.#ctx);
    this.channelLeases = new KyselyChannelLeaseRepository(this.#ctx);
    this.claims = new KyselyConversationClaimRepository(this.#ctx);
    this.processes = new KyselyProcessRepository(this.#ctx);
    this.focus = new KyselyFocusRepository(this.#ctx);
    this.identityEvents = new KyselyIdentityEventRepository(this.#ctx);
    this.adminActions = new KyselyAdminActionRepository(this.#ctx);
    this.dashboardSessions = new KyselyDashboardSessionRepository(this.#ctx);
    this.handoffs = new KyselyHandoffRepository(this.#ctx);
    this.approvals = new KyselyApprovalRepository(this.#ctx);
    this.operatorAccounts = new KyselyOperatorAccountRepository(this.#ctx);
    this.summaries = new KyselySummaryRepository(this.#ctx);
    this.spend = new KyselySpendRepository(this.#ctx);
    this.personRate = new KyselyPersonRateRepository(this.#ctx);
    this.profiles = new KyselyProfileRepository(this.#ctx);
    this.operators = new KyselyOperatorQueries(this.#ctx);
    this.heartbeat =
      options.heartbeatDb === undefined ? this : new KyselyStore(options.heartbeatDb, { dialect, ...(options.now === undefined ? {} : { now: options.now }) });
  }

  /** The SQL dialect this store speaks. */
  get dialect(): StoreDialect {
    return this.#ctx.dialect.dialect;
  }

  /**
   * Runs `fn` in one transaction and hands it a store bound to it. Use only that store inside `fn`: on SQLite the
   * transaction holds the single connection, so a query through the outer store would wait for it forever.
   * Errors thrown by `fn` are rethrown as they are; a failing BEGIN or COMMIT becomes a StoreError. A transaction the
   * database rolled back to break a deadlock runs again (up to five times), so `fn` must do nothing but its writes.
   */
  async transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    const { db } = this.#ctx;
    if (db.isTransaction) return fn(this);
    const engine = this.#engine;
    if (engine !== undefined) {
      // The engine runs its transactions one at a time on one transaction-bound Kysely: one store serves them all.
      return engine.transaction((trx) => {
        let tx = this.#engineTxStore;
        if (tx === undefined || tx.#ctx.db !== trx) this.#engineTxStore = tx = new KyselyStore(trx, { dialect: this.#ctx.dialect, now: this.#ctx.now });
        return fn(tx);
      }, transactionError);
    }
    return retryingDeadlocks(() => this.#transactionOnce(fn));
  }

  async #transactionOnce<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    const { db } = this.#ctx;
    let failure: { readonly error: unknown } | undefined;
    try {
      return await db.transaction().execute(async (trx) => {
        try {
          return await fn(new KyselyStore(trx, { dialect: this.#ctx.dialect, now: this.#ctx.now }));
        } catch (error) {
          failure = { error };
          throw error;
        }
      });
    } catch (error) {
      if (failure !== undefined && failure.error === error) throw error;
      throw transactionError(error);
    }
  }

  ping(): Promise<void> {
    return storeOperation('ping', async () => {
      await sql`select 1`.execute(this.#ctx.db);
    });
  }

  /**
   * Closes the connection pool (or the SQLite file). Safe to call twice.
   *
   * @throws StoreError `misuse` on a transaction-bound store: close the store that opened the transaction.
   */
  async close(): Promise<void> {
    if (this.#ctx.db.isTransaction) {
      throw new StoreError('misuse', 'close() was called on the store handed to transaction(); close the root store instead.');
    }
    if (this.#closed) return;
    this.#closed = true;
    if (this.heartbeat !== this) await this.heartbeat.close();
    await this.#ctx.db.destroy();
  }
}

const transactionError = (error: unknown): Error => toStoreError('transaction', error);
