import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The server the PostgreSQL suites use; override with PALAVER_TEST_POSTGRES_URL. */
export const TEST_POSTGRES_URL = process.env.PALAVER_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A database of its own for one test file. */
export interface TestPostgresDatabase {
  /** URL of the fresh, empty database. */
  readonly url: string;
  /** Drops the database, closing any connection still open to it. Safe to call twice. */
  drop(): Promise<void>;
}

/**
 * Creates `palaver_test_<random>` on the test server. Fails — never skips — when the server is unreachable, so a
 * missing PostgreSQL shows up as a red suite rather than a silently thinner run.
 */
export async function createTestPostgresDatabase(): Promise<TestPostgresDatabase> {
  const name = `palaver_test_${randomBytes(6).toString('hex')}`;
  await withAdmin((admin) => admin.query(`create database ${name}`));
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      await withAdmin((admin) => admin.query(`drop database if exists ${name} with (force)`));
    },
  };
}

async function withAdmin<T>(fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL, connectionTimeoutMillis: 5_000 });
  try {
    await admin.connect();
  } catch (error) {
    const where = redact(TEST_POSTGRES_URL);
    throw new Error(
      `PostgreSQL not reachable at ${where}: ${(error as Error).message}. Start it ` +
        '(pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start) or set PALAVER_TEST_POSTGRES_URL.',
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
