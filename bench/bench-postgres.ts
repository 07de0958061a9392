/**
 * A fresh PostgreSQL database for one bench run, on the server the tests use: PALAVER_BENCH_POSTGRES_URL, else
 * PALAVER_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/postgres (trust auth on the machine's server).
 */
import { createScratchPostgresDatabase, TEST_POSTGRES_URL, type TestPostgresDatabase } from '../test/support/postgres.js';

export const BENCH_POSTGRES_URL = process.env.PALAVER_BENCH_POSTGRES_URL ?? TEST_POSTGRES_URL;

/** Creates an empty database named `palaver_bench_<random>`. @throws Error when PostgreSQL cannot be reached. */
export function createBenchPostgresDatabase(): Promise<TestPostgresDatabase> {
  return createScratchPostgresDatabase({ url: BENCH_POSTGRES_URL, prefix: 'palaver_bench', hint: 'Start it or set PALAVER_BENCH_POSTGRES_URL.' });
}
