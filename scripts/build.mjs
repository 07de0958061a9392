#!/usr/bin/env node
// `npm run build`: dist/ as the package ships it.
//   1. Types: `tsc -p tsconfig.build.json` writes only the declarations (dist/**/*.d.ts), one per source file.
//   2. JavaScript: esbuild bundles src/ from the package's entry points (its `exports`, the CLI, the SQLite
//      checkpointer's worker, and two internal modules the benchmarks load) into those same paths, with the code
//      they share split into dist/chunks/. Every module still exists once, so `palaver` and `palaver/server` hand
//      out the same classes; code behind a dynamic import stays behind it (createPalaver still loads only the
//      adapters its config names).
//      Why: Node's ES module loader pays for every file (resolve, read, compile, link). `palaver start` opened 134
//      of Palaver's own files, now 38; it answers ~40 ms sooner on this project's CI machine (BENCHMARKS.md).
//   3. Dependencies loaded as many small files become one module each in dist/vendor/, and the bundle imports them
//      from there: Kysely (262 ES modules, ~175 ms one by one on Node 20, ~30 ms as one), the HTTP server (hono,
//      @hono/node-server: 45 modules, ~18 ms, ~4 ms as one) and prom-client (CommonJS, 32 files and
//      @opentelemetry/api's 51, ~60 ms, ~35 ms as one). Their whitespace and comments go (Kysely's doc comments are
//      half its size and hold non-ASCII characters, which made V8 keep the whole source as a two-byte string).
//      Nothing of them crosses Palaver's API by identity: a Kysely instance an application hands to KyselyStore is
//      only called, metrics registered in `palaver.metrics.registry` are never tested with instanceof, and channel
//      routes take a web-standard Request and return a Response (an application mounting `createHttpApp()` in its
//      own Hono app uses `route` or `mount`, which only call it). So these copies and an application's own live side
//      by side. Also bundled: grammY with its plugins (without
//      node-fetch; see VENDORED). Every other dependency is imported from node_modules as usual.
// Tests and the type checker use src/ and the packages as they are; only what ships is bundled.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/**
 * The package's `exports` (dist/x.js ← src/x.ts), the CLI, the worker the checkpointer starts by its path, and the
 * internal modules the benchmarks import from dist/ by path (bench/inbox-load.ts).
 */
const entryPoints = [
  ...Object.values(pkg.exports)
    .map((target) => (typeof target === 'object' ? target.default : undefined))
    .filter((target) => typeof target === 'string' && target.startsWith('./dist/') && target.endsWith('.js'))
    .map((target) => target.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts')),
  'src/cli/main.ts',
  'src/store/sqlite/checkpoint-worker.ts',
  'src/channels/memory/memory-channel.ts',
  'src/cli/heap-growth.ts',
];

/** Dependencies bundled into dist/vendor/, and how the compiled code refers to them. */
const VENDORED = [
  { name: 'kysely', file: 'kysely.js', format: 'esm', reference: /(\bfrom\s*|\bimport\s*\(\s*)(['"])kysely\2/g },
  {
    name: 'hono',
    file: 'hono.js',
    format: 'esm',
    // One module for the five entry points the server imports; the compiled code imports only these names.
    contents: [
      "export { Hono } from 'hono';",
      "export { bodyLimit } from 'hono/body-limit';",
      "export { serve } from '@hono/node-server';",
      "export { getConnInfo } from '@hono/node-server/conninfo';",
      "export { deleteCookie, getCookie, setCookie } from 'hono/cookie';",
    ].join('\n'),
    reference: /(\bfrom\s*|\bimport\s*\(\s*)(['"])(?:hono|hono\/body-limit|hono\/cookie|@hono\/node-server|@hono\/node-server\/conninfo)\2/g,
  },
  // metrics.ts requires prom-client on the first PalaverMetrics through createRequire, which esbuild may rename
  // (require2): the argument is matched.
  { name: 'prom-client', file: 'prom-client.cjs', format: 'cjs', reference: /(\(\s*)(['"])prom-client\2(?=\s*\))/g },
  {
    // The Telegram bot channel: grammY with its runner and auto-retry plugins, which require grammY's Node build. That
    // build requires node-fetch (with whatwg-url and tr46, ~19 MB resident) and abort-controller at load even when a
    // fetch is passed, as Palaver does; both are replaced by a few lines over Node's globals (scripts/vendor-shims/).
    // CommonJS, as grammY is: esbuild lists the names below for Node's ES module loader.
    name: 'grammy',
    file: 'grammy.cjs',
    format: 'cjs',
    contents: [
      "export { Api, Bot, GrammyError, HttpError, InputFile } from 'grammy';",
      "export { autoRetry } from '@grammyjs/auto-retry';",
      "export { createConcurrentSink, createRunner, createSource, sequentialize } from '@grammyjs/runner';",
    ].join('\n'),
    alias: { 'node-fetch': './scripts/vendor-shims/node-fetch.cjs', 'abort-controller': './scripts/vendor-shims/abort-controller.cjs' },
    reference: /(\bfrom\s*|\bimport\s*\(\s*)(['"])(?:grammy|@grammyjs\/runner|@grammyjs\/auto-retry)\2/g,
  },
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

for (const vendored of VENDORED) {
  await build({
    ...(vendored.contents
      ? { stdin: { contents: vendored.contents, resolveDir: root, sourcefile: `${vendored.name}-entry.js` } }
      : { entryPoints: [fileURLToPath(import.meta.resolve(vendored.name))] }),
    outfile: join(dist, 'vendor', vendored.file),
    ...(vendored.alias ? { alias: vendored.alias } : {}),
    bundle: true,
    format: vendored.format,
    platform: 'node',
    target: 'node20',
    minifyWhitespace: true,
    charset: 'ascii',
    legalComments: 'eof',
    banner: { js: `// ${vendored.name} and its dependencies (see their licenses in node_modules), bundled into one module by scripts/build.mjs.` },
    logLevel: 'warning',
  });
}

// Points the compiled code at the vendored modules, by a path relative to each output file (chunks and entry points
// sit at different depths).
const pointing = new Map(VENDORED.map((vendored) => [vendored.name, 0]));
for (const file of outputs) {
  const source = readFileSync(file, 'utf8');
  let changed = source;
  for (const vendored of VENDORED) {
    let target = relative(dirname(file), join(dist, 'vendor', vendored.file)).split('\\').join('/');
    if (!target.startsWith('.')) target = `./${target}`;
    const next = changed.replace(vendored.reference, (_match, before, quote) => `${before}${quote}${target}${quote}`);
    if (next !== changed) pointing.set(vendored.name, pointing.get(vendored.name) + 1);
    changed = next;
  }
  if (changed !== source) writeFileSync(file, changed);
}
for (const [name, files] of pointing) {
  if (files === 0) throw new Error(`build: no compiled module uses ${name}; did the way src/ loads it change?`);
}

console.log(`dist: ${entryPoints.length} entry points and ${outputs.length - entryPoints.length} shared chunks from src/, types from tsc, ${VENDORED.length} bundled dependencies in dist/vendor/.`);
