import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../cli/child-process.js';

// deploy/palaver.service (docs/deploy.md) checked by systemd's own tool, which this project's machines have (Debian's
// systemd package). A machine without it fails here with the command that installs it.
const UNIT = join(REPO_ROOT, 'deploy', 'palaver.service');

function systemdAnalyze(args: readonly string[]): { status: number | null; output: string } {
  const run = spawnSync('systemd-analyze', [...args, UNIT], { encoding: 'utf8', env: { ...process.env, SYSTEMD_COLORS: '0' } });
  if (run.error) throw new Error(`systemd-analyze could not run (${run.error.message}); install it: apt-get install systemd`);
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('the systemd unit', () => {
  it('passes `systemd-analyze verify` without a warning (a misspelt key is only warned about, so none may be printed)', () => {
    expect(systemdAnalyze(['verify'])).toEqual({ status: 0, output: '' });
  });

  it('is rated at most 2.0 ("OK") by `systemd-analyze security`: sandboxed, its own user, no capabilities', () => {
    const rated = systemdAnalyze(['security', '--offline=yes', '--no-pager', '--threshold=20']);
    expect(rated.output).toMatch(/Overall exposure level for palaver\.service: (?:[01]\.\d|2\.0) OK/);
    expect(rated.status).toBe(0);
  });
});
