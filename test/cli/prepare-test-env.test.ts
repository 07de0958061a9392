import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanEnv, REPO_ROOT } from './child-process.js';

const SCRIPT = join(REPO_ROOT, 'scripts', 'prepare-test-env.mjs');

// `npm test` runs the script before the suites, so chromium, PostgreSQL, MariaDB and Redis are already in place here and
// the script only checks them (it would install chromium if it were missing).
describe('scripts/prepare-test-env.mjs', () => {
  it('finds chromium, PostgreSQL, MariaDB and Redis ready', () => {
    const run = spawnSync(process.execPath, [SCRIPT], { cwd: REPO_ROOT, env: cleanEnv(), encoding: 'utf8', timeout: 300_000 });
    expect(run.stdout).toContain('ready: chromium, PostgreSQL, MariaDB, Redis');
    expect(run.status).toBe(0);
  }, 300_000);

  it('stops at once with the command to run when PALAVER_TEST_POSTGRES_URL does not answer, starting nothing', () => {
    const run = spawnSync(process.execPath, [SCRIPT], {
      cwd: REPO_ROOT,
      env: cleanEnv({ PALAVER_TEST_POSTGRES_URL: 'postgres://postgres@127.0.0.1:9/postgres' }),
      encoding: 'utf8',
      timeout: 300_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('PALAVER_TEST_POSTGRES_URL points at 127.0.0.1:9, which does not answer.');
    expect(run.stderr).toContain('Run: unset PALAVER_TEST_POSTGRES_URL');
    expect(run.stdout).not.toContain('starting');
  }, 300_000);
});
