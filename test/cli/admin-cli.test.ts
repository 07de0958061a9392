import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { TEST_SECRETS } from '../support/secrets.js';
import { cleanEnv, killAll, REPO_ROOT, spawnTs, type RunningChild } from './child-process.js';

// `palaver admin` as an operator runs it: the built CLI (bin/palaver.js over dist/; `npm test` builds first) in its
// own process, against a real `palaver start --demo` (scripted model, real SQLite) in another.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const BIN = join(REPO_ROOT, 'bin', 'palaver.js');
const TOKEN = TEST_SECRETS.adminToken;
const dirs: string[] = [];
let server: { child: RunningChild; url: string; cwd: string };

function tempCwd(): string {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-admin-'));
  dirs.push(dir);
  return dir;
}

beforeAll(async () => {
  const cwd = tempCwd();
  const child = spawnTs(BIN, ['start', '--demo', '--port', '0'], { cwd, env: cleanEnv({ PALAVER_ADMIN_TOKEN: TOKEN }) });
  const match = await child.waitForOutput(/Palaver is listening on (http:\/\/[^\s]+)/, 30_000);
  server = { child, url: match[1]!, cwd };
});

afterAll(async () => {
  await killAll();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs `palaver admin …` to its end, in a fresh folder unless `cwd` is given. */
async function admin(args: readonly string[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnTs(BIN, ['admin', ...args], { cwd: options.cwd ?? tempCwd(), env: cleanEnv(options.env ?? { PALAVER_ADMIN_TOKEN: TOKEN }) });
  const exit = await child.waitForExit(30_000);
  return { code: exit.code, stdout: child.stdout(), stderr: child.stderr() };
}

describe('palaver admin: arguments and exit codes', () => {
  it('documents every command and the exit codes in --help', async () => {
    const help = await admin(['--help']);
    expect(help.code).toBe(0);
    for (const command of ['users', 'conversations', 'show', 'send', 'pause', 'resume', 'end', 'costs']) expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    expect(help.stdout).toMatch(/Exit codes:\n {2}0 {2}done\n {2}1 {2}usage error.*\n {2}2 {2}not found.*\n {2}3 {2}refused.*\n {2}4 {2}unavailable/);
    expect(help.stdout).toContain('PALAVER_ADMIN_TOKEN');
  });

  it('exits 1 on a usage error, before any request', async () => {
    const cases = [
      ['--url', server.url, 'users', '--limit', '0'],
      ['--url', server.url, 'conversations', '--status', 'sleeping'],
      ['--url', server.url, 'costs', '--by', 'week'],
      ['--url', server.url, 'costs', '--from', 'last tuesday'],
      ['--url', server.url, 'send', 'only-a-session-id'],
      ['--url', server.url, 'frobnicate'],
    ];
    const runs = await Promise.all(cases.map((args) => admin(args)));
    for (const [index, run] of runs.entries()) {
      expect({ args: cases[index], code: run.code }).toEqual({ args: cases[index], code: 1 });
      expect(run.stdout).toBe('');
      expect(run.stderr).not.toBe('');
    }
  });

  it('exits 4 and says so when no Palaver answers at the URL', async () => {
    const closed = await freePort();
    const run = await admin(['--url', `http://127.0.0.1:${closed}`, 'conversations']);
    expect(run.code).toBe(4);
    expect(run.stderr).toContain(`Cannot reach Palaver at http://127.0.0.1:${closed}`);
    expect(run.stderr).toContain('--url');
  });

  it('exits 3 with the server\'s reason for a wrong or missing token, and never prints the token', async () => {
    const wrong = await admin(['--url', server.url, 'users'], { env: { PALAVER_ADMIN_TOKEN: 'not-the-admin-token-at-all' } });
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toContain('admin token');
    const missing = await admin(['--url', server.url, '--json', 'conversations'], { env: {} });
    expect(missing.code).toBe(3);
    expect(missing.stdout).toBe('');
    for (const run of [wrong, missing]) expect(run.stdout + run.stderr).not.toContain(TOKEN);
  });

  it('exits 4 for a 5xx, and for an answer that is not the admin API\'s', async () => {
    const fake = await answering((path) => (path.startsWith('/admin/users') ? [500, { error: { code: 'internal_error', message: 'The server failed.' } }] : [200, { hello: 'world' }]));
    try {
      const failed = await admin(['--url', fake.url, 'users']);
      expect(failed.code).toBe(4);
      expect(failed.stderr).toContain('The server failed.');
      const foreign = await admin(['--url', fake.url, 'costs']);
      expect(foreign.code).toBe(4);
      expect(foreign.stderr).toContain('not the admin API');
    } finally {
      fake.server.close();
    }
  });

  it('finds the local Palaver from the config file\'s server.port and its token from server.adminToken', async () => {
    const cwd = tempCwd();
    const port = Number(new URL(server.url).port);
    writeFileSync(join(cwd, 'palaver.config.json'), JSON.stringify({ model: { name: 'x' }, server: { port, adminToken: 'a-wrong-token-from-the-config' } }));
    // Reached (401 → 3, not unreachable → 4), with the config's token: the wrong one.
    const fromConfig = await admin(['users'], { cwd, env: {} });
    expect(fromConfig.code).toBe(3);
    expect(fromConfig.stderr).toContain('admin token');
  });
});

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** A stand-in server that answers every request with `reply(path)`'s status and JSON. */
async function answering(reply: (path: string) => [number, unknown]): Promise<{ server: Server; url: string }> {
  const fake = createServer((request, response) => {
    const [status, body] = reply(request.url ?? '/');
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  return { server: fake, url: `http://127.0.0.1:${(fake.address() as AddressInfo).port}` };
}
