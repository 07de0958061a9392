import type { Selectable } from 'kysely';
import { newId } from '../../domain/ids.js';
import type { NewOperatorAccount, OperatorAccount, OperatorAccountRepository, OperatorRole } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { toDate } from './rows.js';
import type { OperatorsTable } from './schema.js';
import { storeOperation } from './store-errors.js';

/** Operator accounts, looked up by token digest on every request that shows one (a unique index, no cache). */
export class KyselyOperatorAccountRepository implements OperatorAccountRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  create(account: NewOperatorAccount) {
    return storeOperation('operatorAccounts.create', async () => {
      const { db, dialect } = this.#ctx;
      const row = {
        id: newId(),
        name: account.name,
        name_key: nameKey(account.name),
        role: account.role,
        token_digest: account.tokenDigest,
        created_at: this.#ctx.now(),
        disabled_at: null,
      };
      // ON CONFLICT DO NOTHING rather than catching the violation: on PostgreSQL a failed statement would abort the
      // caller's transaction.
      const inserted = await dialect.insertOrIgnore(db.insertInto('operators').values(row), ['name_key']).executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows !== 1n) return { created: false as const };
      return { created: true as const, account: toOperatorAccount(row) };
    });
  }

  list(): Promise<OperatorAccount[]> {
    return storeOperation('operatorAccounts.list', async () => {
      const rows = await this.#ctx.db.selectFrom('operators').selectAll().orderBy('created_at').orderBy('name_key').execute();
      return rows.map(toOperatorAccount);
    });
  }

  findById(id: string): Promise<OperatorAccount | undefined> {
    return storeOperation('operatorAccounts.findById', async () => {
      const row = await this.#ctx.db.selectFrom('operators').selectAll().where('id', '=', id).executeTakeFirst();
      return row && toOperatorAccount(row);
    });
  }

  findByName(name: string): Promise<OperatorAccount | undefined> {
    return storeOperation('operatorAccounts.findByName', async () => {
      const row = await this.#ctx.db.selectFrom('operators').selectAll().where('name_key', '=', nameKey(name)).executeTakeFirst();
      return row && toOperatorAccount(row);
    });
  }

  findActiveByTokenDigest(tokenDigest: string): Promise<OperatorAccount | undefined> {
    return storeOperation('operatorAccounts.findActiveByTokenDigest', async () => {
      const row = await this.#ctx.db
        .selectFrom('operators')
        .selectAll()
        .where('token_digest', '=', tokenDigest)
        .where('disabled_at', 'is', null)
        .executeTakeFirst();
      return row && toOperatorAccount(row);
    });
  }

  disable(id: string, at: Date): Promise<boolean> {
    return storeOperation('operatorAccounts.disable', async () => {
      const result = await this.#ctx.db
        .updateTable('operators')
        .set({ disabled_at: at.getTime() })
        .where('id', '=', id)
        .where('disabled_at', 'is', null)
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    });
  }

  replaceTokenDigest(id: string, tokenDigest: string): Promise<boolean> {
    return storeOperation('operatorAccounts.replaceTokenDigest', async () => {
      const result = await this.#ctx.db
        .updateTable('operators')
        .set({ token_digest: tokenDigest })
        .where('id', '=', id)
        .where('disabled_at', 'is', null)
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    });
  }
}

/** The form names are compared in: `Olena`, `OLENA` and `olena` are one name. */
function nameKey(name: string): string {
  return name.normalize('NFC').toLowerCase();
}

function toOperatorAccount(row: Selectable<OperatorsTable>): OperatorAccount {
  return {
    id: row.id,
    name: row.name,
    role: row.role as OperatorRole,
    createdAt: toDate(row.created_at),
    disabledAt: row.disabled_at === null ? null : toDate(row.disabled_at),
  };
}
