#!/usr/bin/env node
// `npm run build`: dist/ as the package ships it.
//   1. Types: `tsc -p tsconfig.build.json` writes only the declarations (dist/**/*.d.ts), one per source file.
//   2. JavaScript: esbuild bundles src/ from the package's entry points (its `exports`, the CLI, the SQLite
//      checkpointer's worker, and an internal module the benchmarks load) into those same paths, with the code
//      they share split into dist/chunks/. Every module still exists once, so `palaver` and `palaver/server` hand
//      out the same classes; code behind a dynamic import stays behind it (createPalaver still loads only the
//      adapters its config names).
//      Why: Node's ES module loader pays for every file (resolve, read, compile, link). `palaver start` opened 134
//      of Palaver's own files, now 38; it answers ~40 ms sooner on this project's CI machine (BENCHMARKS.md).
//   Dependencies are not bundled (esbuild's `packages: 'external'`): the compiled code imports them from
//   node_modules, as npm lists them, unmodified.
// Tests and the type checker use src/ and the packages as they are; only what ships is bundled.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/**
 * The package's `exports` (dist/x.js ← src/x.ts), the CLI, the worker the checkpointer starts by its path, and the
 * internal module the benchmarks import from dist/ by path (bench/inbox-load.ts).
 */
const entryPoints = [
  ...Object.values(pkg.exports)
    .map((target) => (typeof target === 'object' ? target.default : undefined))
    .filter((target) => typeof target === 'string' && target.startsWith('./dist/') && target.endsWith('.js'))
    .map((target) => target.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts')),
  'src/cli/main.ts',
  'src/store/sqlite/checkpoint-worker.ts',
  'src/channels/memory/memory-channel.ts',
];

rmSync(dist, { recursive: true, force: true });

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });

const result = await build({
  absWorkingDir: root,
  entryPoints,
  outbase: 'src',
  outdir: 'dist',
  bundle: true,
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  sourcesContent: false,
  // Identifiers and lines stay, so stack traces read as the source does. Non-ASCII characters in strings (the ru,
  // uk and zh catalogues) are escaped: one such character makes V8 hold the whole chunk's source as a two-byte string.
  charset: 'ascii',
  legalComments: 'eof',
  metafile: true,
  logLevel: 'warning',
});
const outputs = Object.keys(result.metafile.outputs)
  .filter((file) => file.endsWith('.js'))
  .map((file) => join(root, file));

console.log(`dist: ${entryPoints.length} entry points and ${outputs.length - entryPoints.length} shared chunks from src/, types from tsc.`);
