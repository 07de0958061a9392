#!/usr/bin/env node
// Runs after `tsc` in `npm run build`: bundles Kysely into one module, dist/vendor/kysely.js, and points the compiled
// store at it. Kysely ships as 262 ES modules, and Node 20 takes about 175 ms to load them one by one against about
// 30 ms for the same code in one file: a third of `palaver start`'s time to its first request. Palaver's source and
// types still import 'kysely' (tests and the type checker use the package as it is); only the compiled JavaScript
// changes. Nothing of Kysely crosses Palaver's public API by identity (a Kysely instance an application hands to
// KyselyStore is only called, never tested with instanceof), so the copy inside dist and an application's own can
// live side by side.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const bundle = join(dist, 'vendor', 'kysely.js');

await build({
  entryPoints: [fileURLToPath(import.meta.resolve('kysely'))],
  outfile: bundle,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  legalComments: 'inline',
  banner: { js: '// Kysely (MIT License, https://github.com/kysely-org/kysely), bundled into one module by scripts/bundle-kysely.mjs.' },
  logLevel: 'warning',
});

const IMPORT = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])kysely\2/g;
let rewritten = 0;
let pointing = 0;
for (const entry of await readdir(dist, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
  const file = join(entry.parentPath ?? entry.path, entry.name);
  if (file === bundle) continue;
  const source = await readFile(file, 'utf8');
  if (!source.includes('kysely')) continue;
  let target = relative(dirname(file), bundle).split('\\').join('/');
  if (!target.startsWith('.')) target = `./${target}`;
  const changed = source.replace(IMPORT, (_match, keyword, quote) => `${keyword}${quote}${target}${quote}`);
  if (changed !== source) {
    await writeFile(file, changed);
    rewritten += 1;
  }
  if (changed.includes(`'${target}'`)) pointing += 1;
}
// tsc leaves unchanged outputs alone, so a second build may find them already pointing at the bundle.
if (pointing === 0) throw new Error('bundle-kysely: no compiled module imports kysely; is dist built?');
console.log(`Kysely bundled into ${relative(root, bundle)}; ${pointing} compiled modules use it (${rewritten} rewritten now).`);
