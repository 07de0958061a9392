import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The server the PostgreSQL suites use; override with PALAVER_TEST_POSTGRES_URL. */
export const TEST_POSTGRES_URL = process.env.PALAVER_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A database of its own for one test file (or one bench run). */
export interface TestPostgresDatabase {
  /** URL of the fresh, empty database. */
  readonly url: string;
  /**
   * Drops the database, closing any connection still open to it. Safe to call twice. A pool's `end()` resolves
   * before its sockets have closed, so the server may end them with an error: open pools with `openPostgresDatabase`,
   * whose error listener takes that; a bare `pg.Pool` turns it into an unhandled error that fails the run.
   */
  drop(): Promise<void>;
}

/** Where a scratch database is made, and what to tell the person when that server does not answer. */
export interface ScratchServer {
  readonly url: string;
  /** The database name's prefix, followed by random hex. */
  readonly prefix: string;
  /** How to start the server or point elsewhere, appended to the error. */
  readonly hint: string;
}

const TEST_SERVER: ScratchServer = {
  url: TEST_POSTGRES_URL,
  prefix: 'palaver_test',
  hint: 'Start it (pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start) or set PALAVER_TEST_POSTGRES_URL.',
};

/**
 * Creates `palaver_test_<random>` on the test server. Fails — never skips — when the server is unreachable, so a
 * missing PostgreSQL shows up as a red suite rather than a silently thinner run.
 */
export function createTestPostgresDatabase(): Promise<TestPostgresDatabase> {
  return createScratchPostgresDatabase(TEST_SERVER);
}

/** Creates an empty database `<prefix>_<random>` on `server`. @throws Error naming the server and the hint. */
export async function createScratchPostgresDatabase(server: ScratchServer): Promise<TestPostgresDatabase> {
  const name = `${server.prefix}_${randomBytes(6).toString('hex')}`;
  await withAdmin(server, (admin) => admin.query(`create database ${name}`));
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      await withAdmin(server, (admin) => admin.query(`drop database if exists ${name} with (force)`));
    },
  };
}

async function withAdmin<T>(server: ScratchServer, fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: server.url, connectionTimeoutMillis: 5_000 });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(`PostgreSQL not reachable at ${redact(server.url)}: ${(error as Error).message}. ${server.hint}`, { cause: error });
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
