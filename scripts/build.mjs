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
//   3. Browser libraries: the prebuilt files the pages load (Chart.js for the dashboard, markdown-it for the web chat;
//      src/platform/browser-assets.ts serves them) are copied unmodified from their packages into dist/browser/, each
//      with its package's license, and SOURCES.md names package and version. Only browsers run them, so the packages
//      are devDependencies (still in the lock file, so `npm audit` sees them) and an installed Palaver needs neither.
// Tests and the type checker use src/ and the packages as they are; only what ships is bundled. The browser libraries
// are the exception: src/ serves them from dist/browser/ as well, so tests need a build first (`npm test` makes one).
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const require = createRequire(import.meta.url);

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

const tsc = require.resolve('typescript/bin/tsc');
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

/** The files the pages load, by package: the names they have in dist/browser/ are the ones the pages ask for. */
const browserLibraries = [
  { name: 'chart.js', file: 'dist/chart.umd.min.js' },
  { name: 'markdown-it', file: 'dist/markdown-it.min.js' },
];

/** The installed package's folder: up from its entry point to the package.json with its name. */
function packageDir(name) {
  const start = dirname(require.resolve(name));
  for (let dir = start; dirname(dir) !== dir; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === name) return dir;
  }
  throw new Error(`build: no package.json of ${name} above ${start}`);
}

const browserDir = join(dist, 'browser');
mkdirSync(browserDir, { recursive: true });
const sources = [];
for (const { name, file } of browserLibraries) {
  const dir = packageDir(name);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const license = readdirSync(dir).find((entry) => /^licen[cs]e(\.|$)/i.test(entry));
  if (license === undefined) throw new Error(`build: ${name} has no LICENSE file in ${dir}`);
  copyFileSync(join(dir, file), join(browserDir, file.split('/').at(-1)));
  copyFileSync(join(dir, license), join(browserDir, `${name}-${license}`));
  sources.push(`| ${file.split('/').at(-1)} | ${name} | ${manifest.version} | ${file} | ${manifest.license}, ${name}-${license} |`);
}
writeFileSync(
  join(browserDir, 'SOURCES.md'),
  [
    '# Browser libraries',
    '',
    "Palaver's pages load these files from Palaver's server. `npm run build` copied them unmodified from these npm",
    "packages (Palaver's devDependencies):",
    '',
    '| File | Package | Version | Path in the package | License |',
    '| --- | --- | --- | --- | --- |',
    ...sources,
    '',
  ].join('\n'),
);

console.log(
  `dist: ${entryPoints.length} entry points and ${outputs.length - entryPoints.length} shared chunks from src/, types from tsc; ${browserLibraries.length} browser libraries.`,
);
