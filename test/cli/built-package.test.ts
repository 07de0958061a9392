import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { killAll, REPO_ROOT, spawnTs, typeLines } from './child-process.js';

// The published package runs dist/, which `npm run build` compiles and in which scripts/bundle-kysely.mjs puts
// Kysely into one module (`npm test` builds first). These tests run that build, not src/.
const DIST = join(REPO_ROOT, 'dist');
const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the built package', () => {
  it('imports Kysely only through its one-module bundle', () => {
    const compiled = readdirSync(DIST, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.js') && file !== join('vendor', 'kysely.js'));
    const importers = compiled.filter((file) => readFileSync(join(DIST, file), 'utf8').includes('/vendor/kysely.js'));
    const bare = compiled.filter((file) => /\bfrom\s*['"]kysely['"]|\bimport\s*\(\s*['"]kysely['"]/.test(readFileSync(join(DIST, file), 'utf8')));
    expect(importers.length).toBeGreaterThan(10);
    expect(bare).toEqual([]);
  });

  it('chats in the terminal on a fresh SQLite file and keeps the notes across a restart (migrations, turns and history through the bundle)', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'palaver-dist-'));
    dirs.push(cwd);
    const first = spawnTs(join(REPO_ROOT, 'bin', 'palaver.js'), ['chat', '--demo'], { cwd });
    typeLines(first, ['remember: call mom', '/exit']);
    expect(await first.waitForExit(30_000)).toEqual({ code: 0, signal: null });
    expect(first.stdout()).toContain('bot> Saved your note: call mom\n');

    const second = spawnTs(join(REPO_ROOT, 'bin', 'palaver.js'), ['chat', '--demo'], { cwd });
    typeLines(second, ['list my notes', '/exit']);
    expect(await second.waitForExit(30_000)).toEqual({ code: 0, signal: null });
    expect(second.stdout()).toContain('bot> Your notes: 1. call mom\n');
  }, 60_000);
});
