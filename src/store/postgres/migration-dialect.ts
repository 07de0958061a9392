import { sql } from 'kysely';
import type { MigrationDialect } from '../migration-types.js';

/** PostgreSQL takes `text` for every string; money is numeric. */
export const postgresMigrations: MigrationDialect = { key: 'text', long: 'text', money: sql`numeric(20, 10)` };
