import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_SECRETS } from '../support/secrets.js';
import { cleanEnv, killAll, REPO_ROOT, spawnNode, typeLines } from './child-process.js';

// The published package runs dist/, which `npm run build` (scripts/build.mjs) bundles from src/: the entry points of
// `exports`, the CLI and the checkpointer's worker, with shared chunks; its dependencies stay in node_modules, as npm
// lists them (`npm test` builds first). These tests run that build with plain Node, not src/.
const DIST = join(REPO_ROOT, 'dist');
const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the built package', () => {
  it("shares one copy of its classes between entry points: an error from palaver/store is an instance of palaver's StoreError", () => {
    const script = `
      const { openStore } = await import(${JSON.stringify(pathToFileURL(join(DIST, 'store', 'index.js')).href)});
      const { StoreError, PalaverError } = await import(${JSON.stringify(pathToFileURL(join(DIST, 'index.js')).href)});
      const error = await openStore('nosuch:x').then(() => undefined, (e) => e);
      console.log(JSON.stringify({ name: error?.name, store: error instanceof StoreError, palaver: error instanceof PalaverError }));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: REPO_ROOT, env: cleanEnv(), encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ name: 'StoreError', store: true, palaver: true });
  });

  it('starts the SQLite checkpointer from its own entry point, which then takes the checkpoints off the main connection', () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-dist-'));
    dirs.push(dir);
    const script = `
      const { openSqliteDatabase, migrateToLatest } = await import(${JSON.stringify(pathToFileURL(join(DIST, 'store', 'index.js')).href)});
      const { CompiledQuery } = await import('kysely');
      const warnings = [];
      process.on('warning', (warning) => warnings.push(warning.message));
      const db = openSqliteDatabase(${JSON.stringify(`sqlite:${join(dir, 'palaver.db')}`)}, { checkpoints: { startAfter: { writes: 0, withinMs: 0 } } });
      await migrateToLatest(db);
      let pages;
      for (let i = 0; i < 200; i += 1) {
        pages = (await db.executeQuery(CompiledQuery.raw('pragma wal_autocheckpoint'))).rows[0].wal_autocheckpoint;
        if (pages === 0 || warnings.length > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await db.destroy();
      console.log(JSON.stringify({ pages, warnings }));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: REPO_ROOT, env: cleanEnv(), encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ pages: 0, warnings: [] });
  });

  it('imports its dependencies from node_modules, as npm lists them: no copy of a dependency ships in dist/ (only the browser libraries, in dist/browser/)', () => {
    const files = readdirSync(DIST, { recursive: true, encoding: 'utf8' });
    expect(files.filter((file) => file.split(sep)[0] === 'vendor')).toEqual([]);
    const compiled = files.filter((file) => file.endsWith('.js')).map((file) => readFileSync(join(DIST, file), 'utf8'));
    // Each is imported by its package name somewhere in the compiled code (so from node_modules).
    for (const name of ['kysely', 'hono', 'prom-client', 'undici', 'grammy']) {
      expect(
        compiled.some((source) => new RegExp(`(?:from\\s*|import\\s*\\(\\s*|require\\w*\\(\\s*)['"]${name}['"]`).test(source)),
        name,
      ).toBe(true);
    }
  });

  it("serves the pages' browser libraries from dist/browser/: the packages' own files, unmodified, with their licenses and versions", async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'palaver-dist-'));
    dirs.push(cwd);
    const server = spawnNode(join(REPO_ROOT, 'bin', 'palaver.js'), ['start', '--demo', '--port', '0'], {
      cwd,
      env: cleanEnv({ PALAVER_ADMIN_TOKEN: TEST_SECRETS.adminToken }),
    });
    const url = (await server.waitForOutput(/Palaver is listening on (http:\/\/[^\s]+)/, 30_000))[1]!;
    const browser = join(DIST, 'browser');
    const sources = readFileSync(join(browser, 'SOURCES.md'), 'utf8');
    const compiled = readdirSync(DIST, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.js') && file.split(sep)[0] !== 'browser')
      .map((file) => readFileSync(join(DIST, file), 'utf8'));
    for (const [path, name, file, license] of [
      ['/markdown-it.min.js', 'markdown-it', 'markdown-it.min.js', 'LICENSE'],
      ['/admin/assets/chart.umd.min.js', 'chart.js', 'chart.umd.min.js', 'LICENSE.md'],
    ] as const) {
      const response = await fetch(`${url}${path}`);
      expect(response.status, path).toBe(200);
      const served = await response.text();
      expect(served).toBe(readFileSync(join(browser, file), 'utf8'));
      // The devDependency's own file, and the license and version that go with it.
      const packageDir = join(REPO_ROOT, 'node_modules', name);
      expect(served).toBe(readFileSync(join(packageDir, 'dist', file), 'utf8'));
      expect(readFileSync(join(browser, `${name}-${license}`), 'utf8')).toBe(readFileSync(join(packageDir, license), 'utf8'));
      const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
      expect(sources).toContain(`| ${file} | ${name} | ${version} |`);
      // The server never loads the package itself: an installed Palaver has no devDependencies.
      expect(
        compiled.some((source) =>
          new RegExp(`(?:from\\s*|import\\s*\\(\\s*|require\\w*\\(\\s*|resolve\\(\\s*)['"]${name.replace('.', '\\.')}['"/]`).test(source),
        ),
        name,
      ).toBe(false);
    }
  });

  it('keeps its compiled code for the next start where Node can (22.1+), and runs the same without (Node 20)', () => {
    const temp = mkdtempSync(join(tmpdir(), 'palaver-cache-'));
    dirs.push(temp);
    const env = cleanEnv({ TMPDIR: temp });
    delete env.NODE_COMPILE_CACHE;
    delete env.NODE_DISABLE_COMPILE_CACHE;
    // Plain node, as a person runs the installed command: no tsx loader in between.
    const run = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'palaver.js'), '--help'], { cwd: temp, env, encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('start the HTTP server');
    const cache = join(temp, 'node-compile-cache');
    if (typeof (module as { enableCompileCache?: unknown }).enableCompileCache === 'function') {
      const cached = readdirSync(cache, { recursive: true, encoding: 'utf8' });
      expect(cached.length).toBeGreaterThan(0);
    } else {
      expect(existsSync(cache)).toBe(false);
    }
  });

  it('serves the demo with its metrics, process metrics included', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'palaver-dist-'));
    dirs.push(cwd);
    const server = spawnNode(join(REPO_ROOT, 'bin', 'palaver.js'), ['start', '--demo', '--port', '0'], { cwd });
    const url = (await server.waitForOutput(/Palaver is listening on (http:\/\/[^\s]+)/, 30_000))[1]!;
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>Palaver demo</title>');
    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toContain('palaver_turns_total');
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
  });

  it('chats in the terminal on a fresh SQLite file and keeps the notes across a restart (migrations, turns and history through the bundle)', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'palaver-dist-'));
    dirs.push(cwd);
    const first = spawnNode(join(REPO_ROOT, 'bin', 'palaver.js'), ['chat', '--demo'], { cwd });
    typeLines(first, ['remember: call mom', '/exit']);
    expect(await first.waitForExit(30_000)).toEqual({ code: 0, signal: null });
    expect(first.stdout()).toContain('bot> Saved your note: call mom\n');

    const second = spawnNode(join(REPO_ROOT, 'bin', 'palaver.js'), ['chat', '--demo'], { cwd });
    typeLines(second, ['list my notes', '/exit']);
    expect(await second.waitForExit(30_000)).toEqual({ code: 0, signal: null });
    expect(second.stdout()).toContain('bot> Your notes: 1. call mom\n');
  }, 60_000);
});
