import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SessionLease } from '../../src/channels/telegram-user/session-lease.js';
import { TelegramSessionFile } from '../../src/channels/telegram-user/session-store.js';
import { openStore } from '../../src/store/index.js';
import { createPalaver } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { FakeMtproto, fakeMtprotoLink, remoteFakeMtprotoLink, serveFakeMtproto, type FakeMtprotoServer } from '../../src/testing/fake-mtproto/index.js';
import { signInSessionFile } from '../../src/testing/fake-mtproto/session-file.js';
import { freePort } from '../support/redis.js';
import { registerRunSecrets } from '../support/run-log.js';
import { openSqliteFile } from '../support/sqlite-file.js';
import { TEST_SECRETS } from '../support/secrets.js';
import { cleanEnv, killAll, PALAVER_ON_FAKE_TELEGRAM_BIN, spawnNode, type RunningChild } from './child-process.js';

// `palaver telegram login|logout|status|sync` as a person runs them: spawned processes answering prompts on stdin,
// against the fake Telegram served on loopback (injected by palaver-on-fake-telegram.ts). Each spawn loads mtcute,
// seconds on a busy machine.
vi.setConfig({ testTimeout: 180_000 });

const API_HASH = TEST_SECRETS.telegramApiHash;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Setup {
  readonly fake: FakeMtproto;
  readonly server: FakeMtprotoServer;
  readonly cwd: string;
  readonly sessionPath: string;
  readonly databaseUrl: string;
}

async function setup(options: { readonly signedIn?: boolean } = {}): Promise<Setup> {
  const fake = new FakeMtproto({
    signedIn: options.signedIn ?? false,
    self: { id: 4_300_000_123, firstName: 'Front', lastName: 'Desk', username: 'front_desk' },
  });
  const server = await serveFakeMtproto(fake);
  cleanups.push(() => server.close());
  const cwd = mkdtempSync(join(tmpdir(), 'palaver-tg-cli-'));
  cleanups.push(() => rmSync(cwd, { recursive: true, force: true }));
  mkdirSync(join(cwd, 'instructions'));
  writeFileSync(join(cwd, 'instructions', 'base.md'), 'You answer for the front desk.\n');
  writeFileSync(
    join(cwd, 'palaver.config.json'),
    JSON.stringify({
      model: { name: 'scripted', baseUrl: 'http://127.0.0.1:9/v1', apiKey: TEST_SECRETS.modelApiKey },
      channels: { web: { enabled: false }, telegramUser: { apiId: 123456, apiHash: API_HASH } },
    }),
  );
  registerRunSecrets([API_HASH]);
  return { fake, server, cwd, sessionPath: join(cwd, 'data', 'telegram-user.session'), databaseUrl: `sqlite:${join(cwd, 'data', 'palaver.db')}` };
}

function palaver(s: Setup, args: readonly string[]): RunningChild {
  return spawnNode(PALAVER_ON_FAKE_TELEGRAM_BIN, [s.server.url, ...args], { cwd: s.cwd, env: cleanEnv() });
}

/** Answers the next prompt matching `prompt` (counted from `from` characters of stdout) with `answer`. */
async function answer(child: RunningChild, prompt: RegExp, line: string): Promise<void> {
  await child.waitForOutput(prompt, 60_000);
  child.process.stdin.write(`${line}\n`);
}

/** The session's auth key as it could leak: hex and base64. Registered with the run-wide secret check too. */
function authKeyForms(sessionPath: string): string[] {
  const db = openSqliteFile(sessionPath);
  try {
    const rows = db.all<{ key: Uint8Array }>('select key from auth_keys');
    expect(rows.length).toBeGreaterThan(0);
    const forms = rows.flatMap((row) => [Buffer.from(row.key).toString('hex'), Buffer.from(row.key).toString('base64')]);
    registerRunSecrets(forms);
    return forms;
  } finally {
    db.close();
  }
}

function expectNoSecrets(child: RunningChild, forms: readonly string[]): void {
  const output = child.stdout() + child.stderr();
  for (const form of [...forms, API_HASH, ...forms.map((f) => f.slice(0, 32))]) expect(output).not.toContain(form);
}

describe('palaver telegram (spawned)', () => {
  it('login asks phone, code (again after a wrong one) and 2FA password, then says who is signed in; status and logout follow', async () => {
    const s = await setup();
    s.fake.password = 'correct horse battery';

    const before = palaver(s, ['telegram', 'status']);
    expect((await before.waitForExit(60_000)).code).toBe(0);
    expect(before.stdout()).toContain('Signed in: no. Sign in with: palaver telegram login');
    // Not signed in: status asked Telegram nothing.
    expect(s.fake.calls).toEqual([]);

    const login = palaver(s, ['telegram', 'login']);
    await answer(login, /Phone number of the account/, '+1 555 010 0100');
    await answer(login, /Login code: /, '99999');
    await login.waitForOutput(/That code is not right/, 30_000);
    await answer(login, /Login code, again: /, s.fake.phoneCode);
    await answer(login, /Two-step verification password \(hint: fake hint\): /, 'correct horse battery');
    const loggedIn = await login.waitForExit(60_000);
    expect(loggedIn.code, login.stderr()).toBe(0);
    expect(login.stdout()).toContain('Signed in as Front Desk (@front_desk, id 4300000123).');
    expect(s.fake.callsOf('auth.signIn').map((call) => (call.request as { phoneCode?: string }).phoneCode)).toEqual(['99999', s.fake.phoneCode]);
    expect(s.fake.callsOf('auth.checkPassword')).toHaveLength(1);
    expect(statSync(s.sessionPath).mode & 0o777).toBe(0o600);
    const keyForms = authKeyForms(s.sessionPath);
    expectNoSecrets(login, keyForms);
    expect(new TelegramSessionFile(s.sessionPath).account()).toEqual({ userId: 4_300_000_123, usernames: ['front_desk'] });

    const status = palaver(s, ['telegram', 'status']);
    expect((await status.waitForExit(60_000)).code, status.stderr()).toBe(0);
    expect(status.stdout()).toContain('Signed in: yes, as @front_desk, id 4300000123');
    expect(status.stdout()).toContain('Connection: no process holds the session');
    expect(status.stdout()).toContain('Telegram: the session works; account Front Desk (@front_desk, id 4300000123)');
    expectNoSecrets(status, keyForms);

    const again = palaver(s, ['telegram', 'login']);
    expect((await again.waitForExit(60_000)).code).toBe(0);
    expect(again.stdout()).toContain('Already signed in as @front_desk, id 4300000123');

    const logout = palaver(s, ['telegram', 'logout']);
    expect((await logout.waitForExit(60_000)).code, logout.stderr()).toBe(0);
    expect(logout.stdout()).toContain('Signed out @front_desk, id 4300000123: the session is ended at Telegram');
    expect(s.fake.callsOf('auth.logOut')).toHaveLength(1);
    expect(s.fake.isSignedIn).toBe(false);
    expect(() => statSync(s.sessionPath)).toThrow();
    expectNoSecrets(logout, keyForms);

    const after = palaver(s, ['telegram', 'status']);
    expect((await after.waitForExit(60_000)).code).toBe(0);
    expect(after.stdout()).toContain('Signed in: no.');
  });

  it('login --qr shows a QR code and signs in once the code is scanned on a phone', async () => {
    const s = await setup();
    const login = palaver(s, ['telegram', 'login', '--qr']);
    await login.waitForOutput(/Scan this code in Telegram on your phone[\s\S]*tg:\/\/login\?token=/, 60_000);
    // The code is drawn with Unicode half blocks.
    expect(login.stdout()).toMatch(/[▀▄█]{10}/);
    s.fake.scanQr();
    const exit = await login.waitForExit(60_000);
    expect(exit.code, login.stderr()).toBe(0);
    expect(login.stdout()).toContain('Signed in as Front Desk (@front_desk, id 4300000123).');
    expect(new TelegramSessionFile(s.sessionPath).isSignedIn()).toBe(true);
    expect(s.fake.callsOf('auth.sendCode')).toEqual([]);
  });

  it('a login code wrong three times fails clearly and leaves nobody signed in', async () => {
    const s = await setup();
    const login = palaver(s, ['telegram', 'login']);
    await answer(login, /Phone number of the account/, '+15550100100');
    await answer(login, /Login code: /, '11111');
    await answer(login, /Login code, again: /, '22222');
    await login.waitForOutput(/That code is not right[\s\S]*That code is not right/, 30_000);
    await answer(login, /Login code, again: [\s\S]*Login code, again: /, '33333');
    const exit = await login.waitForExit(60_000);
    expect(exit.code).toBe(1);
    expect(login.stderr()).toContain('Login failed: the login code was wrong 3 times. Run palaver telegram login again for a new code.');
    expect(new TelegramSessionFile(s.sessionPath).isSignedIn()).toBe(false);
  });

  it('palaver start with the channel configured but not signed in fails at once, naming palaver telegram login, without a request to Telegram', async () => {
    const s = await setup();
    const start = palaver(s, ['start', '--port', '0']);
    const exit = await start.waitForExit(60_000);
    expect(exit.code).toBe(1);
    expect(start.stderr()).toContain('palaver telegram login');
    expect(s.fake.calls).toEqual([]);
  });

  it('refuses to touch a session another process holds, naming it; sync imports in order and a second sync imports nothing new', async () => {
    const s = await setup({ signedIn: true });
    mkdirSync(join(s.cwd, 'data'), { recursive: true });
    await signInSessionFile(fakeMtprotoLink(s.fake), s.sessionPath);
    const ann = s.fake.addUser({ firstName: 'Ann', username: 'ann_lee' });
    s.fake.incoming(ann.id, 'Hello, are you open on Sunday?');
    s.fake.ownerWrites(ann.id, 'Yes, from ten to four.');
    s.fake.incoming(ann.id, 'Great, see you then');
    const store = await openStore(s.databaseUrl);
    cleanups.push(() => store.close());

    // This test process holds the session, as a running `palaver start` would.
    // It holds no admin API either: asking it to sync fails, and the message names the holder and what to do.
    const held = await SessionLease.acquire({ leases: store.channelLeases });
    const refused = palaver(s, ['telegram', 'sync', '@ann_lee', '--url', `http://127.0.0.1:${await freePort()}`]);
    expect((await refused.waitForExit(60_000)).code).toBe(1);
    expect(refused.stderr()).toContain(`Cannot sync history: the Telegram user account's session is in use by process ${process.pid} on host ${hostname()}`);
    expect(refused.stderr()).toContain('Asking it to sync instead failed: Cannot reach Palaver');
    expect(refused.stderr()).toContain('PALAVER_ADMIN_TOKEN');
    const status = palaver(s, ['telegram', 'status']);
    expect((await status.waitForExit(60_000)).code).toBe(0);
    expect(status.stdout()).toContain(`Connection: held by process ${process.pid} on host ${hostname()}`);
    expect(s.fake.callsOf('messages.getHistory')).toEqual([]);
    await held.release();

    const sync = palaver(s, ['telegram', 'sync', '@ann_lee']);
    expect((await sync.waitForExit(90_000)).code, sync.stderr()).toBe(0);
    expect(sync.stdout()).toContain(`Read 3 messages of the chat with Ann (@ann_lee), id ${ann.id}`);
    expect(sync.stdout()).toContain('3 were new and are stored, 0 were stored already');
    const session = await store.sessions.findByConversation('telegram-user', String(ann.id));
    expect(session).toBeDefined();
    const stored = await store.messages.listRecent(session!.id, { limit: 10 });
    expect(stored.map((message) => [message.role, message.content])).toEqual([
      ['user', 'Hello, are you open on Sunday?'],
      ['assistant', 'Yes, from ten to four.'],
      ['user', 'Great, see you then'],
    ]);

    const twice = palaver(s, ['telegram', 'sync', String(ann.id), '--limit', '50']);
    expect((await twice.waitForExit(90_000)).code, twice.stderr()).toBe(0);
    expect(twice.stdout()).toContain('0 were new and are stored, 3 were stored already');
    expect(await store.messages.listRecent(session!.id, { limit: 10 })).toHaveLength(3);
    // Nothing was sent and no model was asked (the config's model endpoint does not even exist).
    expect(s.fake.sent()).toEqual([]);
    expect(readFileSync(s.sessionPath).length).toBeGreaterThan(0);
  });

  it('sync works while the agent runs the account: the running Palaver syncs through its own session, behind the admin token', async () => {
    const s = await setup({ signedIn: true });
    const adminToken = 'telegram-sync-admin-token-0123456789';
    registerRunSecrets([adminToken]);
    const configFile = join(s.cwd, 'palaver.config.json');
    writeFileSync(configFile, JSON.stringify({ ...JSON.parse(readFileSync(configFile, 'utf8')), server: { adminToken } }));
    mkdirSync(join(s.cwd, 'data'), { recursive: true });
    // The chat happened before the account was signed in here: history to sync, not news for the running channel.
    const ann = s.fake.addUser({ firstName: 'Ann', username: 'ann_lee' });
    s.fake.incoming(ann.id, 'Hello, are you open on Sunday?');
    s.fake.ownerWrites(ann.id, 'Yes, from ten to four.');
    s.fake.incoming(ann.id, 'Great, see you then');
    await signInSessionFile(fakeMtprotoLink(s.fake), s.sessionPath);

    // The agent, as `palaver start` runs it from the same config: it holds the session.
    const running = await createPalaver(loadConfig({ file: configFile, cwd: s.cwd, env: {} }).config, {
      telegramUserNetwork: remoteFakeMtprotoLink(s.server.url),
      logger: silentLogger(),
    });
    cleanups.push(() => running.close());
    const server = await running.serve({ host: '127.0.0.1', port: 0 });
    cleanups.push(() => server.close());
    expect((await running.health())['telegram-user']).toEqual({ ok: true, detail: 'connected' });

    // With a wrong admin token the running Palaver refuses, and nothing is read from Telegram.
    const refused = spawnNode(PALAVER_ON_FAKE_TELEGRAM_BIN, [s.server.url, 'telegram', 'sync', '@ann_lee', '--url', server.url], {
      cwd: s.cwd,
      env: cleanEnv({ PALAVER_ADMIN_TOKEN: 'not-the-admin-token-0123456789abcdef' }),
    });
    expect((await refused.waitForExit(60_000)).code).toBe(1);
    expect(refused.stderr()).toContain('Send the admin token');
    expect(s.fake.callsOf('messages.getHistory')).toEqual([]);

    // On the agent's machine the config says it all: its address (server.host, server.port) and server.adminToken.
    writeFileSync(
      configFile,
      JSON.stringify({ ...JSON.parse(readFileSync(configFile, 'utf8')), server: { adminToken, port: Number(new URL(server.url).port) } }),
    );
    const sync = palaver(s, ['telegram', 'sync', '@ann_lee']);
    expect((await sync.waitForExit(90_000)).code, sync.stderr()).toBe(0);
    expect(sync.stdout()).toContain(`Read 3 messages of the chat with Ann (@ann_lee), id ${ann.id}`);
    expect(sync.stdout()).toContain('3 were new and are stored, 0 were stored already');
    expect(sync.stdout()).toContain(`Synced through the running Palaver at ${server.url}, which holds the session.`);
    const session = await running.store.sessions.findByConversation('telegram-user', String(ann.id));
    const stored = await running.store.messages.listRecent(session!.id, { limit: 10 });
    expect(stored.map((message) => [message.role, message.content])).toEqual([
      ['user', 'Hello, are you open on Sunday?'],
      ['assistant', 'Yes, from ten to four.'],
      ['user', 'Great, see you then'],
    ]);
    // Each keeps the time Telegram gave it, so a model shown times sees when it was written.
    expect(stored.map((message) => message.meta?.['at'])).toEqual(s.fake.history(ann.id).map((message) => new Date(message.date * 1000).toISOString()));
    // The agent kept its session (one MTProto connection, its own), answered nothing and sent nothing.
    expect((await running.health())['telegram-user']).toEqual({ ok: true, detail: 'connected' });
    expect(s.fake.sent()).toEqual([]);

    const twice = spawnNode(PALAVER_ON_FAKE_TELEGRAM_BIN, [s.server.url, 'telegram', 'sync', String(ann.id), '--url', server.url], {
      cwd: s.cwd,
      env: cleanEnv({ PALAVER_ADMIN_TOKEN: adminToken }),
    });
    expect((await twice.waitForExit(90_000)).code, twice.stderr()).toBe(0);
    expect(twice.stdout()).toContain('0 were new and are stored, 3 were stored already');
  });
});
