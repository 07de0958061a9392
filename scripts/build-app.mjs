#!/usr/bin/env node
// The container image's build, run by the Dockerfile (`RUN node scripts/build-app.mjs /src /app`) and by
// test/deploy/build-app.test.ts, which starts what it makes: the image and the test cannot drift apart.
//
//   node scripts/build-app.mjs <source> <app>
//
// From a copy of the repository (<source>, which it builds in place) to the folder the image runs (<app>, made anew):
//   1. `npm ci --ignore-scripts` in <source>: every dependency, devDependencies included, for the build (tsc,
//      esbuild, and the pages' browser libraries). Install scripts are skipped: the build loads no native module.
//   2. `npm run build`: dist/, the browser libraries in dist/browser/ included.
//   3. `npm pack`: the package exactly as it is published (package.json's `files`: bin, dist, web, examples,
//      templates), unpacked into <app> with the lock file beside it.
//   4. `npm ci --omit=dev` in <app>: the production dependencies at their locked versions, nothing else. The
//      package's own `prepare` (a build) must not run there, so install scripts are skipped and then run for the
//      dependencies that have them (`npm rebuild`: better-sqlite3 fetches its prebuilt binary or compiles it).
//   5. node_modules/palaver → the package itself: an agent's tools module in a folder under <app> (the image's
//      /app/agent) imports `palaver` and `zod` as a project that installed Palaver does, and gets this copy.
// Plain Node and npm, no dependencies: the official node image has both.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const [source, app] = process.argv.slice(2).map((path) => resolve(path));
if (source === undefined || app === undefined) {
  console.error('usage: node scripts/build-app.mjs <source folder> <app folder>');
  process.exit(2);
}
if (!existsSync(join(source, 'package-lock.json'))) {
  console.error(`build-app: ${source} has no package-lock.json; give the folder of a Palaver checkout.`);
  process.exit(2);
}

/** Runs a command in `cwd`, its output passed through; stops the build when it fails. */
function run(cwd, command, args) {
  console.log(`build-app: (${cwd}) ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { cwd, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`build-app: ${command} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status ?? result.signal}`})`);
    process.exit(1);
  }
}

// The lock file pins every version and its checksum: packages already in npm's cache need no registry round trip.
const quiet = ['--no-audit', '--no-fund', '--prefer-offline'];

run(source, 'npm', ['ci', '--ignore-scripts', ...quiet]);
run(source, 'npm', ['run', 'build']);

const packed = mkdtempSync(join(tmpdir(), 'palaver-pack-'));
try {
  // `npm pack` would run `prepare` (a second build) without --ignore-scripts.
  run(source, 'npm', ['pack', '--ignore-scripts', '--loglevel=warn', '--pack-destination', packed]);
  const tarball = readdirSync(packed).find((file) => file.endsWith('.tgz'));
  if (tarball === undefined) throw new Error(`npm pack left no tarball in ${packed}`);
  rmSync(app, { recursive: true, force: true });
  mkdirSync(app, { recursive: true });
  run(app, 'tar', ['-xzf', join(packed, tarball), '--strip-components=1']);
} finally {
  rmSync(packed, { recursive: true, force: true });
}
cpSync(join(source, 'package-lock.json'), join(app, 'package-lock.json'));

run(app, 'npm', ['ci', '--omit=dev', '--ignore-scripts', ...quiet]);
run(app, 'npm', ['rebuild', '--omit=dev']);
// Relative, so the folder can be copied elsewhere (the image's COPY --from=build).
symlinkSync('..', join(app, 'node_modules', 'palaver'), 'dir');
console.log(`build-app: ${app} is ready: node ${join(app, 'bin', 'palaver.js')} start`);
