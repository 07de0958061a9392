import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** What the build reads: a change to any of these makes dist/ stale. */
const BUILD_INPUTS = ['src', 'scripts/build.mjs', 'package.json', 'tsconfig.json', 'tsconfig.build.json'];
/** Written last by the build's esbuild step: its time is the build's. */
const BUILT = join(ROOT, 'dist', 'cli', 'main.js');

/**
 * vitest `globalSetup`: tests start `palaver` as people run it, bin/palaver.js over dist/ (test/cli/child-process.ts).
 * `npm test` builds first; a run of a few files after an edit of src/ would otherwise test yesterday's dist/, so a
 * dist/ older than what it is built from is built again here, once, before any test starts.
 */
export default function setup(): void {
  const built = existsSync(BUILT) ? statSync(BUILT).mtimeMs : 0;
  const changed = BUILD_INPUTS.map((input) => newestChange(join(ROOT, input))).reduce((a, b) => Math.max(a, b), 0);
  if (changed <= built) return;
  console.log(
    built === 0
      ? 'dist/ is missing: building it for the tests that start palaver'
      : 'dist/ is older than src/: building it again for the tests that start palaver',
  );
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
}

function newestChange(path: string): number {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path, { withFileTypes: true }).reduce((newest, entry) => Math.max(newest, newestChange(join(path, entry.name))), stat.mtimeMs);
}
