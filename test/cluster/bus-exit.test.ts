import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';
import { TEST_REDIS_URL, testRedisSettings } from '../support/redis.js';

let database: TestPostgresDatabase;
beforeAll(async () => {
  database = await createTestPostgresDatabase();
});
afterAll(async () => {
  await database?.drop();
});

describe('closing a cluster bus', () => {
  it('leaves nothing open: a process that closed its PostgreSQL and Redis buses exits on its own', async () => {
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    const probe = fileURLToPath(new URL('./fixtures/bus-exit-probe.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', tsx, probe, database.url, TEST_REDIS_URL, testRedisSettings().keyPrefix], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exit = await new Promise<{ code: number | null; hung: boolean }>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve({ code: null, hung: true });
      }, 15_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, hung: false });
      });
    });
    expect(exit, output).toEqual({ code: 0, hung: false });
    expect(output.match(/closed/g)).toHaveLength(2);
  });
});
