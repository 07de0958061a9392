import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';

/** The server the MariaDB suites use; override with PALAVER_TEST_MYSQL_URL. */
export const TEST_MYSQL_URL = process.env.PALAVER_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';

/** A database of its own for one test file. */
export interface TestMariadbDatabase {
  /** URL of the fresh, empty database. */
  readonly url: string;
  /** Drops the database. Safe to call twice. */
  drop(): Promise<void>;
}

/**
 * Creates `palaver_test_<random>` (utf8mb4, binary collation) on the test server. Fails — never skips — when the
 * server is unreachable, so a missing MariaDB shows up as a red suite rather than a silently thinner run.
 */
export async function createTestMariadbDatabase(): Promise<TestMariadbDatabase> {
  const name = `palaver_test_${randomBytes(6).toString('hex')}`;
  await withAdmin((admin) => admin.query(`create database ${name} character set utf8mb4 collate utf8mb4_bin`));
  const url = new URL(TEST_MYSQL_URL);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      await withAdmin((admin) => admin.query(`drop database if exists ${name}`));
    },
  };
}

async function withAdmin<T>(fn: (admin: mysql.Connection) => Promise<T>): Promise<T> {
  let admin: mysql.Connection;
  try {
    admin = await mysql.createConnection({ uri: TEST_MYSQL_URL, connectTimeout: 5_000 });
  } catch (error) {
    throw new Error(
      `MariaDB not reachable at ${redact(TEST_MYSQL_URL)}: ${(error as Error).message}. Start it ` +
        '(start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd) or set PALAVER_TEST_MYSQL_URL.',
      { cause: error },
    );
  }
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

function redact(url: string): string {
  const parsed = new URL(url);
  if (parsed.password !== '') parsed.password = '***';
  return parsed.toString();
}
