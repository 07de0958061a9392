import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_SECRETS } from '../support/secrets.js';
import { cleanEnv, killAll, PALAVER_BIN, REPO_ROOT, spawnNode } from './child-process.js';
import { parseSse } from '../server/sse.js';
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

/** The agent's reply to one message over AG-UI, as the web chat sends it. */
async function aguiReply(url: string, text: string): Promise<string> {
  const response = await fetch(`${url}/agui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      threadId: 'first-hour',
      runId: `run-${Date.now()}`,
      messages: [{ id: `u-${Date.now()}`, role: 'user', content: text }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    }),
  });
  expect(response.status).toBe(200);
  return parseSse(await response.text())
    .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
    .map((event) => event['delta'])
    .join('');
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
        'model-replies.yaml',
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
      scripts: { test: 'tsx --test test/*.test.ts', start: 'palaver start', dev: 'palaver dev' },
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

  // The whole promise, as a newcomer runs it: a clean copy of this repository, `npm run palaver -- init`, and in the
  // project `npm install`, `npm test` and `npm start` answering a message on the offline model — with the repository
  // copy gone before the project installs, as on another machine. Offline: `npm ci` in the copy is stood in for by
  // this repository's node_modules (linked) and dist/ (what its `prepare` builds), the project's `npm install` by
  // installWithoutRegistry. Each step's time is printed.
  it('from a clean copy of the repository: init, then npm install, npm test and npm start answer offline, with the copy gone', async () => {
    const work = tempDir('palaver-first-hour-');
    const steps: string[] = [];
    const timed = <T>(step: string, run: () => T): T => {
      const started = performance.now();
      const result = run();
      steps.push(`${step}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
      return result;
    };
    const clone = join(work, 'palaver');
    timed('clean copy (git ls-files), node_modules and dist/ in place of npm ci', () => {
      const files = spawnSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: REPO_ROOT, encoding: 'utf8' }).stdout.split('\0').filter(Boolean);
      for (const file of files) if (existsSync(join(REPO_ROOT, file))) cpSync(join(REPO_ROOT, file), join(clone, file));
      symlinkSync(join(REPO_ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir');
      cpSync(join(REPO_ROOT, 'dist'), join(clone, 'dist'), { recursive: true });
    });
    // What running an example leaves in a developer's clone (git ignores it) must not travel in the packed Palaver.
    mkdirSync(join(clone, 'examples', 'logistics', 'data'), { recursive: true });
    writeFileSync(join(clone, 'examples', 'logistics', 'data', 'web-cookie-secret'), 'a-developer-secret');
    // npm only runs scripts here; offline, so not even its update check reaches the network.
    const env = cleanEnv({ npm_config_offline: 'true', npm_config_update_notifier: 'false' });
    const init = timed('npm run palaver -- init ../my-agent', () =>
      spawnSync('npm', ['run', 'palaver', '--', 'init', '../my-agent'], { cwd: clone, encoding: 'utf8', env, timeout: 60_000 }),
    );
    expect(init.status, init.stdout + init.stderr).toBe(0);
    expect(init.stdout).toContain('cd ../my-agent');
    const project = join(work, 'my-agent');
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    // The project carries the Palaver it was made with: a path inside it, valid on any machine.
    expect(manifest.dependencies['palaver']).toBe('file:vendor/palaver-0.1.0.tgz');
    const packed = spawnSync('tar', ['-tzf', join(project, 'vendor', 'palaver-0.1.0.tgz')], { encoding: 'utf8' }).stdout;
    expect(packed).toContain('package/dist/cli/main.js');
    expect(packed).not.toContain('/data/');
    rmSync(clone, { recursive: true, force: true });

    timed('npm install (stand-in: unpack vendor/, link the locked dependencies)', () =>
      installWithoutRegistry(project, join(project, 'vendor', 'palaver-0.1.0.tgz')),
    );
    const test = timed('npm test', () => spawnSync('npm', ['test'], { cwd: project, encoding: 'utf8', env, timeout: 60_000 }));
    expect(test.status, test.stdout + test.stderr).toBe(0);
    // node:test's summary: `# pass 1` (TAP, Node 20 and 22 when piped) or `ℹ pass 1` (spec, Node 24's default).
    expect(test.stdout).toMatch(/^[#ℹ] pass 1\b/m);

    // npm start with the project's own config on a free port, as a person would run it: no API key anywhere.
    writeFileSync(join(project, 'palaver.config.yaml'), readFileSync(join(project, 'palaver.config.yaml'), 'utf8').replace('port: 3000', 'port: 0'));
    // The admin token turns the dashboard on, so its chart library is served too.
    const started = performance.now();
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
      steps.push(`npm start until listening: ${((performance.now() - started) / 1000).toFixed(1)} s`);
      // The agent answers, through the offline model's rules and the project's own tool.
      expect(await aguiReply(url, 'Are you open on Saturday?')).toBe('We are open saturday: 10:00–16:00.');
      expect(await aguiReply(url, 'Do you sell bread?')).toContain('You said: "Do you sell bread?"');
      expect(output).not.toMatch(/Sorry|API key/i);
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
    console.log(`The first hour, offline (Node ${process.versions.node}):\n  ${steps.join('\n  ')}`);
  }, 180_000);
});
