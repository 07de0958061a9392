import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The `name` in Palaver's own package.json. */
const PACKAGE_NAME = 'palaver';

/**
 * The package's root folder: the nearest folder above this code whose package.json is Palaver's (by its name, so a
 * package.json of something else on the way up is passed over). This module may run from `src/` (tsx, tests), or
 * bundled into an entry point or a shared chunk of `dist/` at any depth.
 */
export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

function findPackageRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (isPalaverManifest(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`Palaver cannot find its package.json (name "${PACKAGE_NAME}") above ${start}`);
  }
}

function isPalaverManifest(file: string): boolean {
  if (!existsSync(file)) return false;
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name === PACKAGE_NAME;
  } catch {
    return false;
  }
}

/** The installed Palaver's version (its package.json's), read on first use. */
export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : '0.0.0';
}
