import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { freePort } from '../support/redis.js';
import { registerRunSecrets } from '../support/run-log.js';
import { TEST_SECRETS } from '../support/secrets.js';
import { cleanEnv, killAll, spawnNode } from './child-process.js';

// `palaver telegram login` where Telegram cannot be reached: it must say so within seconds, before asking for a phone
// number, instead of waiting forever while mtcute retries. Real TCP to loopback stands in for the data centre.
vi.setConfig({ testTimeout: 60_000 });

const BIN = new URL('./palaver-on-unreachable-telegram.ts', import.meta.url).pathname;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function project(): string {
  const cwd = mkdtempSync(join(tmpdir(), 'palaver-tg-unreachable-'));
  cleanups.push(() => rmSync(cwd, { recursive: true, force: true }));
  mkdirSync(join(cwd, 'instructions'));
  writeFileSync(join(cwd, 'instructions', 'base.md'), 'You answer for the front desk.\n');
  writeFileSync(
    join(cwd, 'palaver.config.json'),
    JSON.stringify({
      model: { name: 'scripted', baseUrl: 'http://127.0.0.1:9/v1', apiKey: TEST_SECRETS.modelApiKey },
      channels: { web: { enabled: false }, telegramUser: { apiId: 123456, apiHash: TEST_SECRETS.telegramApiHash } },
    }),
  );
  registerRunSecrets([TEST_SECRETS.telegramApiHash]);
  return cwd;
}

/** A TCP server that accepts connections and never writes a byte: a data centre behind a dropping firewall. */
async function silentServer(): Promise<number> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return (server.address() as { port: number }).port;
}

async function login(target: string): Promise<{ code: number | null; seconds: number; stdout: string; stderr: string }> {
  const started = Date.now();
  const child = spawnNode(BIN, [target, 'telegram', 'login'], { cwd: project(), env: cleanEnv() });
  const exit = await child.waitForExit(30_000);
  return { code: exit.code, seconds: (Date.now() - started) / 1000, stdout: child.stdout(), stderr: child.stderr() };
}

describe('palaver telegram login without a way to Telegram', () => {
  it('fails within seconds when connections are refused, naming the data centre and what to check', async () => {
    const closed = await freePort();
    const run = await login(`127.0.0.1:${closed}`);
    expect(run.code).toBe(1);
    expect(run.seconds).toBeLessThan(10);
    expect(run.stderr).toMatch(/Cannot reach Telegram at data centre 2 \(149\.154\.167\.50:443\): 3 connection attempts failed/);
    expect(run.stderr).toContain(`ECONNREFUSED 127.0.0.1:${closed}`);
    expect(run.stderr).toContain('outgoing TCP connections to Telegram (port 443)');
    // It never got as far as asking for the phone number.
    expect(run.stdout).not.toContain('Phone number');
  });

  it('fails after its timeout when the address takes connections and never answers', async () => {
    const port = await silentServer();
    const run = await login(`127.0.0.1:${port}`);
    expect(run.code).toBe(1);
    expect(run.seconds).toBeLessThan(12);
    expect(run.stderr).toMatch(/Cannot reach Telegram at data centre 2 \(149\.154\.167\.50:443\): no answer within 8 s/);
    expect(run.stdout).not.toContain('Phone number');
  });
});
