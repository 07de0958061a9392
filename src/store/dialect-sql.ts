import type { Kysely } from 'kysely';
import { StoreError } from '../domain/errors.js';
import { STORE_DIALECTS } from './dialects.js';
import type { DialectStrategy, StoreDialect } from './kysely/dialect-strategy.js';
import type { DialectSql } from './store-dialect.js';

// Every dialect's SQL half, from the registry (src/store/dialects.ts). The registry's entries load it on demand, so
// that the config, which reads the registry, loads no Kysely; here it is loaded once, with the store's code, and up
// front (top-level await) because a KyselyStore is made and its migrations listed synchronously.
const LOADED: ReadonlyMap<StoreDialect, DialectSql> = new Map(
  await Promise.all(STORE_DIALECTS.map(async (dialect) => [dialect.name, await dialect.loadSql()] as const)),
);

/**
 * The SQL half of the dialect named `name`.
 *
 * @throws StoreError `unsupported_dialect` for a name src/store/dialects.ts does not list.
 */
export function dialectSql(name: StoreDialect): DialectSql {
  const found = LOADED.get(name);
  if (found === undefined)
    throw new StoreError('unsupported_dialect', `No store dialect is named "${name}"; the store speaks ${[...LOADED.keys()].join(', ')}.`);
  return found;
}

/** The strategy of each dialect the store speaks. */
export const DIALECT_STRATEGIES: Readonly<Record<StoreDialect, DialectStrategy>> = Object.fromEntries(
  [...LOADED].map(([name, { strategy }]) => [name, strategy]),
) as Record<StoreDialect, DialectStrategy>;

/**
 * Tells the dialect of a Kysely instance from its adapter.
 *
 * @throws StoreError `unsupported_dialect` for an adapter of none of the dialects (Kysely's SQLite, PostgreSQL or MySQL adapters).
 */
export function dialectOf(db: Kysely<any>): StoreDialect {
  const adapter = db.getExecutor().adapter;
  for (const [name, { adapter: dialectAdapter }] of LOADED) if (adapter instanceof dialectAdapter) return name;
  const known = [...LOADED.values()].map((sql) => sql.adapter.name).join(', ');
  throw new StoreError(
    'unsupported_dialect',
    `The store supports Kysely's ${known}, got ${adapter.constructor.name}; pass { dialect } to KyselyStore if yours is compatible.`,
  );
}
