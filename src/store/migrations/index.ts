import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { StoreError } from '../../domain/errors.js';
import { dialectOf } from '../dialect-sql.js';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { toStoreError } from '../kysely/store-errors.js';
import { initialMigration } from './0001-initial.js';
import { lighterTurnWritesMigration } from './0002-lighter-turn-writes.js';
import { durableInboxMigration } from './0003-durable-inbox.js';
import { outboxAndChannelStateMigration } from './0004-outbox-and-channel-state.js';
import { profilesMigration } from './0005-profiles.js';
import { identityAuditMigration } from './0006-identity-audit.js';
import { cachedTokensAndDailySpendMigration } from './0007-cached-tokens-and-daily-spend.js';
import { messageTokenEstimateMigration } from './0008-message-token-estimate.js';
import { focusMigration } from './0009-focus.js';
import { inboundAttemptsMigration } from './0010-inbound-attempts.js';
import { focusPerPersonMigration } from './0011-focus-per-person.js';
import { budgetReservationsMigration } from './0012-budget-reservations.js';
import { turnJournalMigration } from './0013-turn-journal.js';
import { accountNamespacesMigration } from './0014-account-namespaces.js';
import { recordedMessagesMigration } from './0015-recorded-messages.js';
import { channelLeasesMigration } from './0016-channel-leases.js';
import { toolOutboxMigration } from './0017-tool-outbox.js';
import { replyActionsMigration } from './0018-reply-actions.js';
import { operatorActionsMigration } from './0019-operator-actions.js';
import { operatorReadIndexesMigration } from './0020-operator-read-indexes.js';
import { conversationClaimsMigration } from './0021-conversation-claims.js';
import { historyIndexPostgresMigration } from './0022-history-index-postgres.js';
import { dashboardSessionsMigration } from './0023-dashboard-sessions.js';
import { budgetReservationsPerProcessMigration } from './0024-budget-reservations-per-process.js';
import { attachmentsMigration } from './0025-attachments.js';
import { personRateLimitsMigration } from './0026-person-rate-limits.js';
import { handoffsMigration } from './0027-handoffs.js';
import { toolApprovalsMigration } from './0030-tool-approvals.js';
import { operatorAccountsMigration } from './0028-operator-accounts.js';
import { conversationSummariesMigration } from './0029-conversation-summaries.js';

/**
 * Every migration, by name, in order. Names sort lexically (Kysely applies them in name order), so always add
 * `0002_…`, `0003_…` at the end and never rename or edit one that has shipped.
 *
 * A static provider rather than Kysely's `FileMigrationProvider`, so the same code runs from `src` (vitest, tsx)
 * and from compiled `dist`, with no directory scanning.
 */
export function migrations(dialect: StoreDialect): Record<string, Migration> {
  return {
    '0001_initial': initialMigration(dialect),
    '0002_lighter_turn_writes': lighterTurnWritesMigration(dialect),
    '0003_durable_inbox': durableInboxMigration(dialect),
    '0004_outbox_and_channel_state': outboxAndChannelStateMigration(dialect),
    '0005_profiles': profilesMigration(dialect),
    '0006_identity_audit': identityAuditMigration(dialect),
    '0007_cached_tokens_and_daily_spend': cachedTokensAndDailySpendMigration(dialect),
    '0008_message_token_estimate': messageTokenEstimateMigration(dialect),
    '0009_focus': focusMigration(dialect),
    '0010_inbound_attempts': inboundAttemptsMigration(dialect),
    '0011_focus_per_person': focusPerPersonMigration(dialect),
    '0012_budget_reservations': budgetReservationsMigration(dialect),
    '0013_turn_journal': turnJournalMigration(dialect),
    '0014_account_namespaces': accountNamespacesMigration(dialect),
    '0015_recorded_messages': recordedMessagesMigration(dialect),
    '0016_channel_leases': channelLeasesMigration(dialect),
    '0017_tool_outbox': toolOutboxMigration(dialect),
    '0018_reply_actions': replyActionsMigration(dialect),
    '0019_operator_actions': operatorActionsMigration(dialect),
    '0020_operator_read_indexes': operatorReadIndexesMigration(dialect),
    '0021_conversation_claims': conversationClaimsMigration(dialect),
    '0022_history_index_postgres': historyIndexPostgresMigration(dialect),
    '0023_dashboard_sessions': dashboardSessionsMigration(dialect),
    '0024_budget_reservations_per_process': budgetReservationsPerProcessMigration(dialect),
    '0025_attachments': attachmentsMigration(dialect),
    '0026_person_rate_limits': personRateLimitsMigration(dialect),
    '0027_handoffs': handoffsMigration(dialect),
    '0028_operator_accounts': operatorAccountsMigration(dialect),
    '0029_conversation_summaries': conversationSummariesMigration(dialect),
    '0030_tool_approvals': toolApprovalsMigration(dialect),
  };
}

/** Options of {@link migrateToLatest}. */
export interface MigrateOptions {
  /** Overrides dialect detection for a custom but compatible Kysely dialect. */
  readonly dialect?: StoreDialect;
}

/**
 * Applies every pending migration. Safe to run repeatedly and from several processes at once (Kysely takes a
 * migration lock). On PostgreSQL each migration runs in a transaction.
 *
 * @returns the names of the migrations applied by this call (empty when the schema was already current).
 * @throws StoreError `migration_failed` naming the failing migration, with the driver error as `cause`.
 * @example
 * const applied = await migrateToLatest(db); // ['0001_initial'] on a fresh database
 */
export async function migrateToLatest(db: Kysely<any>, options: MigrateOptions = {}): Promise<string[]> {
  const all = migrations(options.dialect ?? dialectOf(db));
  const provider: MigrationProvider = { getMigrations: async () => all };
  // 0005-0008 were written beside 0009_focus and shipped after it: a database already at 0009 must still take them.
  const migrator = new Migrator({ db, provider, allowUnorderedMigrations: true });
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results.find((result) => result.status === 'Error')?.migrationName;
    const cause = toStoreError('migrate', error);
    const where = failed === undefined ? 'before any migration ran' : `in migration ${failed}`;
    throw new StoreError('migration_failed', `Migrating the database failed ${where}: ${cause.message}`, { cause: error });
  }
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName);
}
