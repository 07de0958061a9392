import { sql } from 'kysely';
import type { MigrationDialect } from '../migration-types.js';

/**
 * MariaDB/MySQL cannot index TEXT, so keys, indexed and enumerated columns are varchar(255) (1020 bytes in utf8mb4,
 * so three of them still fit InnoDB's 3072-byte index key) and free text is LONGTEXT. Tables are InnoDB in utf8mb4
 * with a binary collation, whatever the database's defaults: ids, dedupe keys and names then compare byte for byte,
 * as on PostgreSQL. Indexes are named per table, so dropping one names its table.
 */
export const mysqlMigrations: MigrationDialect = {
  key: sql`varchar(255)`,
  long: sql`longtext`,
  money: sql`decimal(20, 10)`,
  createTable: (table) => table.modifyEnd(sql`engine = InnoDB default charset = utf8mb4 collate = utf8mb4_bin`),
  dropIndexOnTable: true,
};
