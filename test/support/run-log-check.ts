import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { checkRunLog, prepareRunLog } from './run-log.js';
import { TEST_SECRETS } from './secrets.js';

/**
 * vitest `globalSetup`: makes the run-wide log folder, hands its path to the workers (`inject('palaverRunLogDir')`),
 * and after the last test searches every recorded log line for a secret. A hit fails `vitest run` with exit code 1
 * even when every test passed; the report masks the secret it names. (vitest 4 only prints an error thrown by a
 * global teardown — "error during close" — and still exits 0, so the teardown sets the exit code itself.)
 */
export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-run-log-'));
  prepareRunLog(dir);
  project.provide('palaverRunLogDir', dir);
  return () => {
    const report = checkRunLog(dir, TEST_SECRETS);
    if (report.leaks.length === 0) {
      console.log(`Secrets in logs: none in ${report.lines} log lines from ${report.files} writers (${report.secrets} secrets searched).`);
      rmSync(dir, { recursive: true, force: true });
      return;
    }
    process.exitCode = 1;
    const shown = report.leaks.slice(0, 20).map((leak) => `  ${leak.file}:${leak.line} [${leak.secrets.join(', ')}]: ${excerpt(leak.text)}`);
    throw new Error(
      [
        `Secrets in logs: ${report.leaks.length} of ${report.lines} log lines of this test run hold a secret (kept in ${dir}):`,
        ...shown,
        ...(report.leaks.length > shown.length ? [`  … and ${report.leaks.length - shown.length} more`] : []),
      ].join('\n'),
    );
  };
}

/** The part of a long line around the first (masked) secret. */
function excerpt(text: string): string {
  const at = text.indexOf('<secret ');
  const start = Math.max(0, at - 160);
  return `${start > 0 ? '…' : ''}${text.slice(start, at + 200)}${at + 200 < text.length ? '…' : ''}`;
}
