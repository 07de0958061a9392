import { sql } from 'kysely';
import type { MigrationDialect } from '../migration-types.js';

/** SQLite takes `text` for every string; money is canonical decimal text (a numeric column would hold floats). */
export const sqliteMigrations: MigrationDialect = { key: 'text', long: 'text', money: sql`text` };
