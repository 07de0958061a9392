import { mysqlDialect } from './mysql/dialect.js';
import { postgresDialect } from './postgres/dialect.js';
import { sqliteDialect } from './sqlite/dialect.js';
import type { StoreDialectPlugin } from './store-dialect.js';

/** The databases Palaver speaks; adding one is its folder under src/store/ and one line here. */
export const STORE_DIALECTS: readonly StoreDialectPlugin[] = [sqliteDialect, postgresDialect, mysqlDialect];

/** The dialect whose scheme `url` starts with (`postgresql://…` → postgres), or undefined. */
export function dialectOfUrl(url: string): StoreDialectPlugin | undefined {
  const scheme = url.slice(0, Math.max(0, url.indexOf(':'))).toLowerCase();
  return STORE_DIALECTS.find((dialect) => dialect.schemes.includes(scheme) && (!dialect.server || url.slice(scheme.length).startsWith('://')));
}
