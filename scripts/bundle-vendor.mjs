#!/usr/bin/env node
// Runs after `tsc` in `npm run build`: bundles the two dependencies that `palaver start` loads as many small files
// into one module each, in dist/vendor/, and points the compiled code at them.
//   - Kysely ships as 262 ES modules: Node 20 takes ~175 ms to load them one by one, ~30 ms as one file.
//   - prom-client requires 32 files and, for its process metrics, @opentelemetry/api's 51: ~60 ms, ~35 ms as one.
// Palaver's source and types still import the packages (tests and the type checker use them as they are); only
// the compiled JavaScript changes. Nothing of either crosses Palaver's API by identity: a Kysely instance an
// application hands to KyselyStore is only called, and metrics an application registers in `palaver.metrics.registry`
// are only called, never tested with instanceof, so these copies and an application's own live side by side.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');

/** What is bundled, how, and which references in compiled code point at it. */
const VENDORED = [
  { name: 'kysely', file: 'kysely.js', format: 'esm', reference: /(\bfrom\s*|\bimport\s*\(\s*)(['"])kysely\2/g },
  { name: 'prom-client', file: 'prom-client.cjs', format: 'cjs', reference: /(\brequire\s*\(\s*)(['"])prom-client\2/g },
];

for (const vendored of VENDORED) {
  const bundle = join(dist, 'vendor', vendored.file);
  await build({
    entryPoints: [fileURLToPath(import.meta.resolve(vendored.name))],
    outfile: bundle,
    bundle: true,
    format: vendored.format,
    platform: 'node',
    target: 'node20',
    // Whitespace and comments go: Kysely's doc comments hold a few non-ASCII characters, which made V8 keep the
    // whole module's source (kept for lazy compilation) as a two-byte string; the source is also half the size.
    // Identifiers stay, so stack traces still name Kysely's functions.
    minifyWhitespace: true,
    charset: 'ascii',
    legalComments: 'eof',
    banner: { js: `// ${vendored.name} and its dependencies (see their licenses in node_modules), bundled into one module by scripts/bundle-vendor.mjs.` },
    logLevel: 'warning',
  });

  let rewritten = 0;
  let pointing = 0;
  for (const entry of await readdir(dist, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
    const file = join(entry.parentPath ?? entry.path, entry.name);
    if (dirname(file) === join(dist, 'vendor')) continue;
    const source = await readFile(file, 'utf8');
    if (!source.includes(vendored.name) && !source.includes(vendored.file)) continue;
    let target = relative(dirname(file), bundle).split('\\').join('/');
    if (!target.startsWith('.')) target = `./${target}`;
    const changed = source.replace(vendored.reference, (_match, keyword, quote) => `${keyword}${quote}${target}${quote}`);
    if (changed !== source) {
      await writeFile(file, changed);
      rewritten += 1;
    }
    if (changed.includes(target)) pointing += 1;
  }
  // tsc leaves unchanged outputs alone, so a second build may find them already pointing at the bundle.
  if (pointing === 0) throw new Error(`bundle-vendor: no compiled module uses ${vendored.name}; is dist built?`);
  console.log(`${vendored.name} bundled into ${relative(root, bundle)}; ${pointing} compiled module(s) use it (${rewritten} rewritten now).`);
}
