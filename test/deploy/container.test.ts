import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { TEST_SECRETS } from '../support/secrets.js';
import { connectTestRedis, dropTestKeys, freePort, TEST_REDIS_URL, testRedisSettings } from '../support/redis.js';
import { cleanEnv, killAll, REPO_ROOT, spawnNode } from '../cli/child-process.js';

// The image (Dockerfile) is built by scripts/build-app.mjs, which needs a Docker engine nowhere: these tests run that
// script on a copy of what the Dockerfile's build stage COPYs, then start its result with the Dockerfile's own
// ENTRYPOINT, CMD, ENV and HEALTHCHECK (and compose.yaml's worker command), read from the files themselves. A change
// to either file that the tests do not follow fails here.

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

interface Stage {
  readonly from: string;
  readonly name: string | undefined;
  readonly instructions: readonly Instruction[];
}

/** The Dockerfile's stages: comments dropped, continued lines joined, ARGs before the first FROM left out. */
function parseDockerfile(text: string): Stage[] {
  const lines = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\s*\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const stages: { from: string; name: string | undefined; instructions: Instruction[] }[] = [];
  for (const line of lines) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (keyword.toUpperCase() === 'FROM') {
      const [from = '', , name] = args.split(/\s+/);
      stages.push({ from, name, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push({ keyword: keyword.toUpperCase(), args });
    }
  }
  return stages;
}

const argsOf = (stage: Stage, keyword: string): string[] => stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
const onlyArgs = (stage: Stage, keyword: string): string => {
  const all = argsOf(stage, keyword);
  expect(all, keyword).toHaveLength(1);
  return all[0]!;
};
/** An exec-form (JSON array) argument, which runs without a shell. */
function execForm(args: string): string[] {
  const value = JSON.parse(args) as unknown;
  expect(Array.isArray(value) && value.every((item) => typeof item === 'string'), `exec form: ${args}`).toBe(true);
  return value as string[];
}

/** `KEY=value KEY2=value2` of ENV (no quotes in ours). */
function envOf(stage: Stage): Record<string, string> {
  return Object.fromEntries(argsOf(stage, 'ENV').flatMap((args) => args.split(/\s+/).map((pair) => pair.split('=', 2) as [string, string])));
}

const dockerfile = parseDockerfile(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'));
const build = dockerfile.find((stage) => stage.name === 'build')!;
const runtime = dockerfile.at(-1)!;
const compose = parseYaml(readFileSync(join(REPO_ROOT, 'compose.yaml'), 'utf8')) as {
  services: Record<string, { command?: string[]; environment?: Record<string, string>; healthcheck?: { test: string[] }; image?: string }>;
};

/** The build stage's one RUN: `node scripts/build-app.mjs <source> <app>`, after its --mount options. */
function buildCommand(): { script: string; source: string; app: string } {
  const words = onlyArgs(build, 'RUN')
    .split(/\s+/)
    .filter((word) => !word.startsWith('--'));
  expect(words.slice(0, 2)).toEqual(['node', 'scripts/build-app.mjs']);
  expect(words).toHaveLength(4);
  return { script: words[1]!, source: words[2]!, app: words[3]! };
}

describe('the Dockerfile and compose.yaml, read as files', () => {
  it('builds with scripts/build-app.mjs from the build stage WORKDIR into the folder the runtime stage copies', () => {
    const { source, app } = buildCommand();
    expect(onlyArgs(build, 'WORKDIR')).toBe(source);
    expect(argsOf(runtime, 'COPY')).toContain(`--from=build ${app} ${app}`);
    // Every path the build stage copies exists, so the test's copy (below) is the build's context.
    for (const copy of argsOf(build, 'COPY')) for (const path of copy.split(/\s+/).slice(0, -1)) expect(existsSync(join(REPO_ROOT, path)), path).toBe(true);
  });

  it('runs on an official Node 22 or 24 image, the same Node and Debian in both stages, as a user that is not root', () => {
    expect(dockerfile).toHaveLength(2);
    // Docker's own ${…} of the ARG, not a template literal.
    const node = ['node:$', '{NODE_VERSION}'].join('');
    expect(build.from).toBe(`${node}-trixie`);
    expect(runtime.from).toBe(`${node}-trixie-slim`);
    const version = /^ARG NODE_VERSION=(\d+)$/m.exec(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'))?.[1];
    expect(['22', '24']).toContain(version);
    expect(onlyArgs(runtime, 'USER')).toBe('node');
  });

  it('starts `palaver start` by default and probes /health on PALAVER_PORT', () => {
    expect(execForm(onlyArgs(runtime, 'ENTRYPOINT'))).toEqual(['node', '/app/bin/palaver.js']);
    expect(execForm(onlyArgs(runtime, 'CMD'))).toEqual(['start']);
    const healthcheck = onlyArgs(runtime, 'HEALTHCHECK');
    expect(healthcheck).toMatch(/^--interval=\S+ --timeout=\S+ --start-period=\S+ --retries=\d+ CMD \[/);
    expect(execForm(healthcheck.slice(healthcheck.indexOf('CMD ') + 4))[0]).toBe('node');
    expect(envOf(runtime)).toMatchObject({ PALAVER_HOST: '0.0.0.0', PALAVER_PORT: '3000', NODE_ENV: 'production' });
  });

  it('compose runs Palaver, a tool worker, PostgreSQL and Redis, each with a health check, configured by the documented variables', () => {
    const { palaver, worker, postgres, redis } = compose.services;
    expect(Object.keys(compose.services).sort()).toEqual(['palaver', 'postgres', 'redis', 'worker']);
    for (const [name, service] of Object.entries({ worker, postgres, redis })) expect(service?.healthcheck?.test, name).toBeDefined();
    expect(worker?.command?.[0]).toBe('worker');
    expect(Object.keys(palaver?.environment ?? {})).toEqual(
      expect.arrayContaining(['PALAVER_DB', 'PALAVER_REDIS_URL', 'PALAVER_ADMIN_TOKEN', 'PALAVER_LLM_API_KEY']),
    );
    // Only names docs/configuration.md lists: Palaver reads no other.
    const reference = readFileSync(join(REPO_ROOT, 'docs', 'configuration.md'), 'utf8');
    const documented = new Set(reference.slice(reference.indexOf('## Environment variables')).match(/PALAVER_[A-Z_]+/g));
    for (const service of [palaver, worker]) for (const name of Object.keys(service?.environment ?? {})) expect(documented, name).toContain(name);
    expect(palaver?.environment?.['PALAVER_DB']).toMatch(/^postgres:\/\/palaver:\$\{POSTGRES_PASSWORD[^}]*\}@postgres:5432\/palaver$/);
  });
});

describe('the app folder scripts/build-app.mjs makes, run as the image runs it', () => {
  const temp = mkdtempSync(join(tmpdir(), 'palaver-image-'));
  const { script, source: imageSource, app: imageApp } = buildCommand();
  // The image's /src and /app, as folders of the test's own.
  const source = join(temp, 'src');
  const app = join(temp, 'app');
  /** A path of the image as it is in the test's folders. */
  const local = (path: string) => path.replace(new RegExp(`^${imageApp}(?=/|$)`), app);
  const agent = local(onlyArgs(runtime, 'WORKDIR'));
  const redis = testRedisSettings();
  let buildSeconds = 0;

  beforeAll(async () => {
    expect(imageSource).toBe('/src');
    // The build context as the Dockerfile's COPY lines take it from a checkout.
    mkdirSync(source);
    for (const copy of argsOf(build, 'COPY'))
      for (const path of copy.split(/\s+/).slice(0, -1)) cpSync(join(REPO_ROOT, path), join(source, path), { recursive: true });
    // In the image better-sqlite3 downloads its prebuilt binary, or compiles it (minutes on 2 cores). Here it gets the
    // one this checkout's `npm ci` made for this Node, through prebuild-install's local-prebuilds folder: the same
    // install step, a binary from nearer by. (npm warns that it does not know the variable; prebuild-install does.)
    const prebuilds = join(temp, 'prebuilds');
    mkdirSync(prebuilds);
    const sqlite = join(REPO_ROOT, 'node_modules', 'better-sqlite3');
    const { version } = JSON.parse(readFileSync(join(sqlite, 'package.json'), 'utf8')) as { version: string };
    const tarball = join(prebuilds, `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`);
    expect((await run('tar', ['-czf', tarball, '-C', sqlite, 'build/Release/better_sqlite3.node'], REPO_ROOT)).code).toBe(0);

    const started = performance.now();
    const built = await run(process.execPath, [join(source, script), source, app], temp, { npm_config_better_sqlite3_local_prebuilds: prebuilds });
    buildSeconds = (performance.now() - started) / 1000;
    if (built.code !== 0) throw new Error(`scripts/build-app.mjs failed (exit ${built.code}):\n${built.output}`);
  }, 600_000);

  afterEach(async () => {
    await killAll();
  });

  afterAll(async () => {
    console.log(`scripts/build-app.mjs built the app folder in ${buildSeconds.toFixed(1)} s`);
    await rm(temp, { recursive: true, force: true });
    await dropTestKeys(redis);
  }, 120_000);

  /** The runtime stage's environment, on loopback (no test listens beyond it) and a free port. */
  const imageEnv = (port: number, extra: Record<string, string> = {}) =>
    cleanEnv({ ...envOf(runtime), PALAVER_HOST: '127.0.0.1', PALAVER_PORT: String(port), ...extra });

  /** A fresh agent folder where the image has it (under the app, so that `palaver` and `zod` resolve from there). */
  function freshAgent(): void {
    rmSync(agent, { recursive: true, force: true });
    mkdirSync(join(agent, 'data'), { recursive: true });
  }

  /** Runs a command given in exec form (its first word `node`): the HEALTHCHECK's, compose's. */
  function runExecForm(argv: readonly string[], env: NodeJS.ProcessEnv) {
    expect(argv[0]).toBe('node');
    return spawnNode(local(argv[1]!), argv.slice(2).map(local), { cwd: agent, env });
  }

  const healthcheck = () => {
    const args = onlyArgs(runtime, 'HEALTHCHECK');
    return execForm(args.slice(args.indexOf('CMD ') + 4));
  };

  it('starts as ENTRYPOINT and CMD say (with --demo: no model key), healthy by the HEALTHCHECK, serving the chat page and the dashboard', async () => {
    freshAgent();
    const port = await freePort();
    const env = imageEnv(port, { PALAVER_ADMIN_TOKEN: TEST_SECRETS.adminToken });
    // Nothing listens yet: the health check fails, so it does check something.
    expect(await runExecForm(healthcheck(), env).waitForExit(15_000)).toEqual({ code: 1, signal: null });

    const server = runExecForm([...execForm(onlyArgs(runtime, 'ENTRYPOINT')), ...execForm(onlyArgs(runtime, 'CMD')), '--demo'], env);
    const url = (await server.waitForOutput(/Palaver is listening on (http:\/\/\S+)/, 60_000))[1]!;
    expect(url).toBe(`http://127.0.0.1:${port}`);
    expect(await runExecForm(healthcheck(), env).waitForExit(15_000)).toEqual({ code: 0, signal: null });
    expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: 'ok', checks: { database: { ok: true } } });

    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>Palaver demo</title>');
    const dashboard = await fetch(`${url}/admin`);
    expect(dashboard.status).toBe(200);
    expect(dashboard.headers.get('content-type')).toContain('text/html');
    // The pages' browser libraries, which the build copies from devDependencies into dist/browser/.
    for (const asset of ['/markdown-it.min.js', '/admin/assets/chart.umd.min.js']) expect((await fetch(`${url}${asset}`)).status, asset).toBe(200);
    // The demo's SQLite file is where the image's one writable folder is.
    expect(existsSync(join(agent, 'data', 'palaver.db'))).toBe(true);
    expect(await server.stop('SIGTERM', 20_000)).toEqual({ code: 0, signal: null });
  }, 90_000);

  it('holds the production dependencies and none of the devDependencies', () => {
    const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
    const devOnly = Object.entries(lock.packages).filter(([path, entry]) => path !== '' && entry.dev === true);
    expect(devOnly.length).toBeGreaterThan(100);
    expect(devOnly.filter(([path]) => existsSync(join(app, path))).map(([path]) => path)).toEqual([]);
    for (const name of ['typescript', 'esbuild', 'vitest', 'tsx', 'chart.js', 'markdown-it'])
      expect(existsSync(join(app, 'node_modules', name)), name).toBe(false);
    for (const path of ['node_modules/better-sqlite3/build/Release/better_sqlite3.node', 'node_modules/kysely', 'dist/cli/main.js', 'web/admin/index.html'])
      expect(existsSync(join(app, path)), path).toBe(true);
    // Nothing of the checkout that the package does not publish.
    for (const path of ['src', 'test', 'scripts', 'tsconfig.json']) expect(existsSync(join(app, path)), path).toBe(false);
  });

  it("runs compose's tool worker on the agent `palaver init` makes (its tools import palaver and zod), healthy by compose's check", async () => {
    freshAgent();
    const env = imageEnv(await freePort(), { PALAVER_REDIS_URL: TEST_REDIS_URL });
    const entrypoint = execForm(onlyArgs(runtime, 'ENTRYPOINT'));
    // The agent as docs/deploy.md makes it: the image's own `palaver init`, then streamed tools.
    expect(await runExecForm([...entrypoint, 'init', agent, '--force'], env).waitForExit(30_000)).toEqual({ code: 0, signal: null });
    let config = readFileSync(join(agent, 'palaver.config.yaml'), 'utf8');
    if (!(process.features as { typescript?: unknown }).typescript) {
      // This Node cannot load TypeScript (the image's Node 24 can): the same tool in JavaScript, with the same imports.
      writeFileSync(
        join(agent, 'tools', 'index.mjs'),
        [
          "import { defineTool } from 'palaver';",
          "import { z } from 'zod';",
          "export const tools = [defineTool({ name: 'opening_hours', description: 'Opening hours', input: z.object({ day: z.string() }), run: ({ day }) => day + ': 9-18' })];",
        ].join('\n'),
      );
      config = config.replace('toolsModule: tools/index.ts', 'toolsModule: tools/index.mjs');
    }
    writeFileSync(join(agent, 'palaver.config.yaml'), `${config}\ntools:\n  dispatch: streams\nredis:\n  keyPrefix: "${redis.keyPrefix}"\n`);
    const metricsPort = await freePort();
    const onPort = (argv: readonly string[]) => argv.map((word) => word.replace('9464', String(metricsPort)));
    const worker = runExecForm([...entrypoint, ...onPort(compose.services['worker']!.command!)], env);
    await worker.waitForOutput(/Palaver worker \S+ is running tool calls/, 60_000);

    const check = compose.services['worker']!.healthcheck!.test;
    expect(check[0]).toBe('CMD');
    expect(await runExecForm(onPort(check.slice(1)), env).waitForExit(15_000)).toEqual({ code: 0, signal: null });
    // The tool the module defined is on offer: its imports resolved to the app's own Palaver and zod.
    const connection = await connectTestRedis(redis);
    try {
      const keys = await connection.client.keys(`${redis.keyPrefix}tools.catalogue:*`);
      expect(keys).toHaveLength(1);
      expect(await connection.client.get(keys[0]!)).toContain('opening_hours');
    } finally {
      await connection.close();
    }
    expect(await worker.stop('SIGTERM', 20_000)).toEqual({ code: 0, signal: null });
  }, 90_000);
});

/** Runs a command to its end, its output kept for the failure message. */
function run(command: string, args: readonly string[], cwd: string, extraEnv: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: cleanEnv(extraEnv), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}
