import type { Selectable } from 'kysely';
import type { ProcessRecord, ProcessRepository } from '../../domain/ports/store.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import type { ProcessesTable } from './schema.js';
import { storeOperation } from './store-errors.js';

/** The processes on the database, and handing a dead one's work on (see the port). */
export class KyselyProcessRepository implements ProcessRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  register(record: ProcessRecord): Promise<void> {
    return storeOperation('processes.register', async () => {
      const { db, dialect } = this.#ctx;
      const row = { id: record.id, host: record.host, pid: record.pid, started_at: record.startedAt, heartbeat_at: record.heartbeatAt };
      await dialect.upsert(db.insertInto('processes').values(row), ['id'], { replace: ['host', 'pid', 'started_at', 'heartbeat_at'] }).execute();
    });
  }

  heartbeat(id: string, now: number): Promise<void> {
    return storeOperation('processes.heartbeat', async () => {
      await this.#ctx.db.updateTable('processes').set({ heartbeat_at: now }).where('id', '=', id).execute();
    });
  }

  list(): Promise<ProcessRecord[]> {
    return storeOperation('processes.list', async () => {
      const rows = await this.#ctx.db.selectFrom('processes').selectAll().orderBy('started_at').orderBy('id').execute();
      return rows.map(toRecord);
    });
  }

  retire(id: string): Promise<number> {
    return storeOperation('processes.retire', () =>
      atomically(this.#ctx.db, async (trx) => {
        const messages = await trx
          .updateTable('inbound_messages')
          .set({ lease_until: 0 })
          .where('owner', '=', id)
          .where('state', '=', 'queued')
          .executeTakeFirst();
        await trx.updateTable('deliveries').set({ lease_until: 0 }).where('owner', '=', id).where('state', '=', 'pending').execute();
        await trx.updateTable('conversation_claims').set({ claimed_until: 0 }).where('owner', '=', id).execute();
        // A summary it was writing is not coming: the conversation's next turn may write it at once.
        await trx.updateTable('summary_claims').set({ expires_at: 0 }).where('owner', '=', id).execute();
        await trx.deleteFrom('processes').where('id', '=', id).execute();
        return Number(messages.numUpdatedRows);
      }),
    );
  }

  forgetSilentSince(before: number): Promise<number> {
    return storeOperation('processes.forgetSilentSince', async () => {
      const result = await this.#ctx.db.deleteFrom('processes').where('heartbeat_at', '<', before).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}

function toRecord(row: Selectable<ProcessesTable>): ProcessRecord {
  return { id: row.id, host: row.host, pid: Number(row.pid), startedAt: Number(row.started_at), heartbeatAt: Number(row.heartbeat_at) };
}
