import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeMtproto, fakeMtprotoLink, serveFakeMtproto, signInSessionFile, type FakeMtprotoServer } from '../../src/testing/fake-mtproto/index.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../src/testing/index.js';
import { cleanEnv, killAll, PALAVER_ON_FAKE_TELEGRAM_BIN, spawnNode, type RunningChild } from '../cli/child-process.js';
import { userTexts } from '../support/palaver-harness.js';
import { readSqliteFile } from '../support/sqlite-file.js';

let model: ScriptedModelServer | undefined;
let server: FakeMtprotoServer | undefined;
afterEach(async () => {
  await killAll();
  await model?.close();
  await server?.close();
  model = server = undefined;
});

/**
 * `palaver start` processes with the Telegram user account on one SQLite file, each reaching the test's fake MTProto
 * server over loopback (injected by `test/cli/palaver-on-fake-telegram.ts`), signed in through a session file made on the fake.
 */
async function rig(telegram: FakeMtproto) {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-telegram-user-crash-'));
  mkdirSync(join(dir, 'instructions'));
  mkdirSync(join(dir, 'data'), { mode: 0o700 });
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
  model = await startScriptedModelServer({ script: (call) => ({ text: `You said: ${userTexts(call).at(-1)}` }) });
  server = await serveFakeMtproto(telegram);
  const fakeUrl = server.url;
  const sessionFile = join(dir, 'data', 'telegram-user.session');
  await signInSessionFile(fakeMtprotoLink(telegram), sessionFile);
  const databaseUrl = `sqlite:${join(dir, 'data', 'palaver.db')}`;
  const configFile = join(dir, 'palaver.config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      model: { name: 'scripted', baseUrl: model.baseUrl, maxRetries: 0, timeoutMs: 60_000 },
      database: { url: databaseUrl },
      agent: { instructionsDir: join(dir, 'instructions') },
      inbox: { leaseMs: 600 },
      log: { level: 'warn' },
      channels: {
        web: { enabled: false },
        telegramUser: { apiId: 12345, apiHash: '0123456789abcdef0123456789abcdef', sessionFile, quietWindowMs: 100 },
      },
    }),
  );
  return {
    databaseUrl,
    /**
     * Starts `palaver start`. After a SIGKILL the dead process's session lease runs out within 2.5 s, and a start
     * meanwhile waits for it rather than being refused: no restart loop is needed.
     */
    async start(): Promise<RunningChild> {
      const child = spawnNode(PALAVER_ON_FAKE_TELEGRAM_BIN, [fakeUrl, 'start', '--port', '0', '-c', configFile], { cwd: dir, env: cleanEnv() });
      await child.waitForOutput(/listening on/, 30_000);
      return child;
    },
  };
}

function outbox(databaseUrl: string): { readonly pending: number; readonly sent: number } {
  return readSqliteFile(databaseUrl, (db) => ({
    pending: Number(db.get<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'")?.n),
    sent: Number(db.get<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE state = 'sent'")?.n),
  }));
}

/** `promise`, or after `ms` a failure that names `step` and shows what `child` printed, so a hang says where it was. */
function within<T>(promise: Promise<T>, ms: number, step: string, child: RunningChild): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${step}: nothing after ${ms} ms. The process printed:\n${child.stdout()}\n${child.stderr()}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('Telegram user account after a SIGKILL', () => {
  it('resends a part Telegram took just before the kill with the same random_id, and the person gets it once', async () => {
    const telegram = new FakeMtproto({ self: { id: 100, firstName: 'Reception' } });
    const ann = telegram.addUser({ firstName: 'Ann' });
    const processes = await rig(telegram);
    const first = await processes.start();

    // Telegram carries out the send, and its answer is held: the process dies before it can mark the part sent.
    const held = telegram.holdNext('messages.sendMessage');
    telegram.incoming(ann.id, 'book a table');
    const applied = await within(held.applied, 30_000, 'the first process sending its reply', first);
    expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');
    held.release();
    expect(telegram.sent(ann.id).map((m) => m.text)).toEqual(['You said: book a table']);
    expect(outbox(processes.databaseUrl)).toEqual({ pending: 1, sent: 0 });

    // The next process cannot know Telegram took it and sends it again, under the same random_id: Telegram keeps one.
    const second = await processes.start();
    await telegram.waitForCall('messages.sendMessage', (call) => call !== applied, 30_000);
    await expect.poll(() => outbox(processes.databaseUrl), { timeout: 15_000, interval: 100 }).toEqual({ pending: 0, sent: 1 });
    const attempts = telegram.callsOf('messages.sendMessage');
    expect(attempts).toHaveLength(2);
    const randomIds = attempts.map((call) => (call.request as { randomId: { toString(): string } }).randomId.toString());
    expect(randomIds[1]).toBe(randomIds[0]);
    expect(telegram.sent(ann.id).map((m) => m.text)).toEqual(['You said: book a table']);
    // The stored reply was resent, not written again; the message the restart caught up again was not answered again.
    expect(model!.calls).toHaveLength(1);

    telegram.incoming(ann.id, 'thanks');
    await telegram.waitForSent(2, { chatId: ann.id, timeoutMs: 20_000 });
    expect(telegram.sent(ann.id).map((m) => m.text)).toEqual(['You said: book a table', 'You said: thanks']);
    await second.stop('SIGTERM', 15_000);
  }, 120_000);
});
