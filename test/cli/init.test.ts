import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_SECRETS } from '../support/secrets.js';
import { cleanEnv, killAll, PALAVER_BIN, REPO_ROOT, spawnNode } from './child-process.js';
import { installWithoutRegistry } from './install-without-registry.js';

const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

describe('palaver init', () => {
  it('scaffolds a project (config, instructions, a TypeScript tool, a test) and refuses a folder that is not empty', async () => {
    const cwd = tempDir('palaver-init-');
    const child = spawnNode(PALAVER_BIN, ['init', 'Front Desk', '--palaver', 'git+https://example.org/palaver.git'], { cwd, env: cleanEnv() });
    expect(await child.waitForExit(30_000)).toEqual({ code: 0, signal: null });
    expect(child.stdout()).toContain('cd Front Desk');
    const project = join(cwd, 'Front Desk');
    expect(readdirSync(project, { recursive: true, encoding: 'utf8' }).sort()).toEqual(
      [
        '.gitignore',
        'README.md',
        'instructions',
        'instructions/base.md',
        'instructions/guest.md',
        'package.json',
        'palaver.config.yaml',
        'test',
        'test/agent.test.ts',
        'tools',
        'tools/index.ts',
      ].sort(),
    );
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as Record<string, any>;
    expect(manifest).toMatchObject({
      name: 'front-desk',
      type: 'module',
      dependencies: { palaver: 'git+https://example.org/palaver.git' },
      scripts: { test: 'tsx --test test/*.test.ts', start: 'palaver start' },
    });
    expect(Object.keys(manifest['dependencies'])).toContain('zod');
    expect(readFileSync(join(project, 'palaver.config.yaml'), 'utf8')).toContain('name: Front desk');

    // Its config passes Palaver's own check (the tool module's path and the role's tool included).
    const doctor = spawnNode(PALAVER_BIN, ['doctor'], { cwd: project, env: cleanEnv() });
    await doctor.waitForExit(60_000);
    expect(doctor.stdout()).toMatch(/^✔ config/m);

    const again = spawnNode(PALAVER_BIN, ['init', 'Front Desk'], { cwd, env: cleanEnv() });
    expect(await again.waitForExit(30_000)).toEqual({ code: 1, signal: null });
    expect(again.stderr()).toContain('is not empty; choose a new folder');
  });

  // The whole promise, as a newcomer runs it: the packed Palaver installed into a fresh project, its test passing
  // with the scripted model, and `npm start` serving. The install is made without the registry (see
  // installWithoutRegistry): what it would fetch is this repository's locked node_modules.
  it('npm test and npm start work in the project against the packed local Palaver', async () => {
    const work = tempDir('palaver-init-e2e-');
    // dist/ is built already (npm test builds before vitest); packing must not build again.
    const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--pack-destination', work], { cwd: REPO_ROOT, encoding: 'utf8', env: cleanEnv() });
    expect(pack.status, pack.stderr).toBe(0);
    const tarball = readdirSync(work).find((file) => file.endsWith('.tgz'))!;
    const init = spawnNode(PALAVER_BIN, ['init', 'agent', '--palaver', join(work, tarball)], { cwd: work, env: cleanEnv() });
    expect(await init.waitForExit(30_000)).toEqual({ code: 0, signal: null });
    const project = join(work, 'agent');
    expect(JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')).dependencies.palaver).toBe(`file:../${tarball}`);

    installWithoutRegistry(project, join(work, tarball));
    // npm only runs scripts here; offline, so not even its update check reaches the network.
    const env = cleanEnv({ npm_config_offline: 'true', npm_config_update_notifier: 'false' });
    const test = spawnSync('npm', ['test'], { cwd: project, encoding: 'utf8', env, timeout: 60_000 });
    expect(test.status, test.stdout + test.stderr).toBe(0);
    // node:test's summary: `# pass 1` (TAP, Node 20 and 22 when piped) or `ℹ pass 1` (spec, Node 24's default).
    expect(test.stdout).toMatch(/^[#ℹ] pass 1\b/m);

    // npm start with the project's own config on a free port, as a person would run it (no API key needed to serve).
    writeFileSync(join(project, 'palaver.config.yaml'), readFileSync(join(project, 'palaver.config.yaml'), 'utf8').replace('port: 3000', 'port: 0'));
    // The admin token turns the dashboard on, so its chart library is served too.
    const start = spawn('npm', ['start'], { cwd: project, env: { ...env, PALAVER_ADMIN_TOKEN: TEST_SECRETS.adminToken }, stdio: 'pipe', detached: true });
    let output = '';
    start.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    start.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`npm start did not listen:\n${output}`)), 60_000);
        start.stdout.on('data', () => {
          const match = /Palaver is listening on (http:\/\/\S+)/.exec(output);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
        start.once('exit', () => reject(new Error(`npm start exited:\n${output}`)));
      });
      expect((await fetch(`${url}/health`)).status).toBeLessThan(600);
      // The pages' browser libraries ship in the package (dist/browser/): an install has not their packages.
      expect(existsSync(join(project, 'node_modules', 'palaver', 'node_modules', 'markdown-it'))).toBe(false);
      for (const [path, library] of [
        ['/markdown-it.min.js', 'markdown-it'],
        ['/admin/assets/chart.umd.min.js', 'Chart.js'],
      ]) {
        const response = await fetch(`${url}${path}`);
        expect(response.status, path).toBe(200);
        expect(await response.text()).toContain(library);
      }
      expect(existsSync(join(project, 'data'))).toBe(true);
    } finally {
      // npm runs palaver in a child: end the whole group.
      process.kill(-start.pid!, 'SIGTERM');
    }
  }, 120_000);
});
