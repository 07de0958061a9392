import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { PalaverError } from '../domain/errors.js';
import { PACKAGE_ROOT, packageVersion } from '../platform/package-root.js';

/** What `palaver init` was asked for. */
export interface InitOptions {
  /** The folder to create the project in (made if missing; must be empty unless `force`). */
  readonly dir: string;
  /**
   * How the project depends on Palaver, as npm takes it: a version range once published, a git URL, the path of a
   * packed tarball (copied into the project's `vendor/`) or of a Palaver folder (kept as a relative `file:` path).
   * Default: this Palaver, packed into `vendor/palaver-<version>.tgz`.
   */
  readonly palaver?: string;
  /** Write into a folder that is not empty (files of the same name are replaced). */
  readonly force?: boolean;
}

/** The scaffold's files, relative to `templates/init/` in the package; `gitignore` is written as `.gitignore`. */
const TEMPLATE_DIR = join(PACKAGE_ROOT, 'templates', 'init');

/**
 * Scaffolds a project that runs its own agent: package.json (Palaver, zod, tsx), a commented config, instructions
 * for a role, a TypeScript tool and a test with the scripted model, so `npm install && npm test && npm start` work.
 * @returns the files written, relative to `dir`.
 * @throws PalaverError `init_not_empty` when `dir` holds files and `force` is not set.
 */
export function initProject(options: InitOptions): readonly string[] {
  const dir = resolve(options.dir);
  if (existsSync(dir) && readdirSync(dir).length > 0 && options.force !== true) {
    throw new PalaverError('init_not_empty', `${dir} is not empty; choose a new folder (palaver init my-agent) or add --force to write into it.`);
  }
  const name = packageName(basename(dir));
  const title = titleOf(name);
  const written: string[] = [];
  const write = (file: string, text: string) => {
    const target = join(dir, file);
    mkdirSync(join(target, '..'), { recursive: true });
    writeFileSync(target, text);
    written.push(file);
  };

  mkdirSync(dir, { recursive: true });
  const palaver = dependencySpec(options.palaver, dir);
  if (palaver.startsWith('file:vendor/')) written.push(palaver.slice('file:'.length));
  write('package.json', `${JSON.stringify(manifest(name, palaver), null, 2)}\n`);
  for (const file of templateFiles(TEMPLATE_DIR)) {
    const text = readFileSync(join(TEMPLATE_DIR, file), 'utf8').replaceAll('{{name}}', name).replaceAll('{{title}}', title);
    write(file === 'gitignore' ? '.gitignore' : file, text);
  }
  return written;
}

/** The project's package.json: Palaver and zod (the tools' schemas) to run, tsx to test (and to load .ts on Node 20). */
function manifest(name: string, palaver: string): Record<string, unknown> {
  const own = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
    engines: Record<string, string>;
  };
  return {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    scripts: {
      start: 'palaver start',
      dev: 'palaver dev',
      chat: 'palaver chat',
      doctor: 'palaver doctor',
      test: 'tsx --test test/*.test.ts',
    },
    dependencies: { palaver, zod: own.dependencies['zod'] },
    devDependencies: { tsx: own.devDependencies['tsx'] },
    engines: own.engines,
  };
}

/**
 * `palaver` as npm takes it. The project must install on any machine, from its own folder: so by default this
 * Palaver is packed into the project (`vendor/palaver-<version>.tgz`, a `file:` path inside it), and a tarball
 * given is copied there. A version or git URL is kept as given; a folder becomes a relative `file:` path (which
 * works where that folder is, e.g. beside the project in one repository).
 */
function dependencySpec(given: string | undefined, dir: string): string {
  if (given === undefined) return `file:vendor/${packInto(join(dir, 'vendor'))}`;
  if (given.endsWith('.tgz')) {
    const tarball = resolve(given);
    if (!existsSync(tarball)) throw new PalaverError('init_no_tarball', `--palaver ${given}: no such file.`);
    mkdirSync(join(dir, 'vendor'), { recursive: true });
    copyFileSync(tarball, join(dir, 'vendor', basename(tarball)));
    return `file:vendor/${basename(tarball)}`;
  }
  const isPath = given.startsWith('.') || given.startsWith('/');
  return isPath ? `file:${relative(dir, resolve(given)) || '.'}` : given;
}

/**
 * Packs this Palaver (the files its package.json lists, dist/ as built) into `folder` with `npm pack`; returns the
 * tarball's name. Scripts are not run: the running Palaver is already built.
 */
function packInto(folder: string): string {
  mkdirSync(folder, { recursive: true });
  const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', folder], { cwd: PACKAGE_ROOT, encoding: 'utf8' });
  const packed = pack.status === 0 ? (JSON.parse(pack.stdout) as { filename?: string }[])[0]?.filename : undefined;
  if (packed === undefined) {
    throw new PalaverError(
      'init_pack_failed',
      `Could not pack Palaver into ${folder} (npm pack: ${(pack.stderr || pack.error?.message || '').trim()}). Pass --palaver <version, git URL or .tgz> instead.`,
    );
  }
  return basename(packed);
}

/** A valid npm package name from a folder name: lower case, `-` for anything else. */
function packageName(folder: string): string {
  const name = folder
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[._-]+|-+$/g, '');
  return name || 'my-agent';
}

/** `my-agent` → `My agent`. */
function titleOf(name: string): string {
  const words = name.replace(/[-_.]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function templateFiles(root: string, under = ''): string[] {
  return readdirSync(join(root, under)).flatMap((entry) => {
    const file = under ? `${under}/${entry}` : entry;
    return statSync(join(root, file)).isDirectory() ? templateFiles(root, file) : [file];
  });
}

/** The next steps `palaver init` prints. */
export function initNextSteps(dir: string): string {
  const where = relative(process.cwd(), resolve(dir)) || '.';
  return [
    `Created a Palaver ${packageVersion()} agent in ${where}. Next:`,
    ...(where === '.' ? [] : [`  cd ${where}`]),
    '  npm install',
    '  npm start       # web chat on http://127.0.0.1:3000/, on the built-in offline model (no API key)',
    '  npm run chat    # the same agent in this terminal',
    '  npm test        # a test of the agent with a scripted model',
    'model-replies.yaml holds what the offline model answers; palaver.config.yaml says how to switch to a real model.',
  ].join('\n');
}
