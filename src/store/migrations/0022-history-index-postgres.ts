import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';

/**
 * PostgreSQL only: the (session_id, audience, seq) index back, so a turn's history (`listRecent` of the display
 * messages) costs the same at 100,000 stored messages as at 10 whatever the planner's statistics say.
 *
 * 0002 dropped it because walking the (session_id, seq) key backwards past the few audit records finds the recent
 * display messages as cheaply. SQLite and MariaDB/MySQL still do that. PostgreSQL chooses that walk only while its
 * statistics know the session is long; when they are stale (the conversation grew since the last ANALYZE, which
 * autovacuum runs only after a tenth of the table changed, or the data was just loaded) it estimates a few rows and
 * reads the whole session in a bitmap scan, then sorts it: 40–80 ms per turn at 100,000 messages instead of 0.1.
 * On this index the recent display messages of a session are its last entries in order, so the backward index
 * scan is the plan at any estimate. It costs one more index entry per stored message.
 *
 * Plain CREATE INDEX (migrations run in a transaction): it holds off writes to `messages` while it builds. On a large
 * database an operator can build it beforehand with CREATE INDEX CONCURRENTLY under the same name; then this step
 * finds it and does nothing (docs/databases.md).
 */
export function historyIndexPostgresMigration(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (dialect !== 'postgres') return;
      await db.schema.createIndex('messages_session_audience_seq_idx').ifNotExists().on('messages').columns(['session_id', 'audience', 'seq']).execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      if (dialect !== 'postgres') return;
      await db.schema.dropIndex('messages_session_audience_seq_idx').execute();
    },
  };
}
