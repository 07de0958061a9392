import { randomUUID } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { buildSync } from 'esbuild';

/**
 * A test's child script (TypeScript under test/) as one plain ES module next to it, so the child starts on plain Node:
 * loading tsx cost each spawn about 1.2 s and 2 s of CPU, and the crash and Telegram tests spawn a few hundred.
 * Packages stay external (imported from node_modules as they are); Palaver itself is imported from dist/ by the
 * children. The bundle sits in the script's own folder, so the script's relative URLs (`../../dist/…`) still point
 * where they did. Built once per test worker; written under a temporary name and renamed, so a worker never starts a
 * half-written file another one is writing.
 */
const bundles = new Map<string, string>();

export function bundledChild(script: string): string {
  const known = bundles.get(script);
  if (known) return known;
  const target = join(dirname(script), `${basename(script, '.ts')}.bundle.mjs`);
  const { outputFiles } = buildSync({
    entryPoints: [script],
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outfile: target,
    write: false,
    logLevel: 'error',
  });
  const output = outputFiles.find((file) => file.path === target);
  if (!output) throw new Error(`esbuild wrote no ${target} for ${script}`);
  const temporary = `${target}.${randomUUID()}.tmp`;
  writeFileSync(temporary, output.contents);
  renameSync(temporary, target);
  bundles.set(script, target);
  return target;
}
