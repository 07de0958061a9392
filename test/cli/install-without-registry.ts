import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { REPO_ROOT } from './child-process.js';

const REPO_MODULES = join(REPO_ROOT, 'node_modules');

interface Manifest {
  readonly bin?: string | Record<string, string>;
  readonly dependencies?: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
}

/**
 * What `npm install` leaves in a scaffolded project, made without the registry (an install took two minutes of
 * every run): the packed Palaver unpacked as node_modules/palaver, its other dependencies (zod, tsx) linked from
 * this repository's node_modules, and their commands in node_modules/.bin. Palaver gets only the packages its
 * `dependencies` name (from this repository, so at the locked versions): a runtime import of a devDependency, or a
 * file missing from the package, still fails as it would for a user.
 */
export function installWithoutRegistry(project: string, tarball: string): void {
  const modules = join(project, 'node_modules');
  const palaver = join(modules, 'palaver');
  mkdirSync(palaver, { recursive: true });
  const untar = spawnSync('tar', ['-xzf', tarball, '-C', palaver, '--strip-components=1'], { encoding: 'utf8' });
  if (untar.status !== 0) throw new Error(`could not unpack ${tarball}: ${untar.stderr}`);
  for (const name of Object.keys(manifestOf(palaver).dependencies ?? {})) linkFromRepo(join(palaver, 'node_modules'), name);
  const scaffold = manifestOf(project);
  for (const name of Object.keys({ ...scaffold.dependencies, ...scaffold.devDependencies })) {
    if (name !== 'palaver') linkFromRepo(modules, name);
    linkCommands(modules, name);
  }
}

function manifestOf(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

function linkFromRepo(modules: string, name: string): void {
  const target = join(REPO_MODULES, name);
  if (!existsSync(target)) throw new Error(`${name} is not installed in this repository`);
  const link = join(modules, name);
  mkdirSync(dirname(link), { recursive: true });
  symlinkSync(target, link, 'dir');
}

/** The package's `bin` entries as node_modules/.bin links, executable, as npm makes them. */
function linkCommands(modules: string, name: string): void {
  const dir = join(modules, name);
  const { bin } = manifestOf(dir);
  const commands = typeof bin === 'string' ? { [name]: bin } : (bin ?? {});
  const bins = join(modules, '.bin');
  mkdirSync(bins, { recursive: true });
  for (const [command, file] of Object.entries(commands)) {
    // Only the unpacked Palaver is ours to change; the linked packages' commands are executable already.
    if (name === 'palaver') chmodSync(join(dir, file), 0o755);
    symlinkSync(relative(bins, join(dir, file)), join(bins, command));
  }
}
