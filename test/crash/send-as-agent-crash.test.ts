import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { TELEGRAM_BOT_CHANNEL } from '../../src/channels/telegram-bot/address.js';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/open-store.js';
import { startFakeTelegram, startScriptedModelServer, type FakeTelegram, type ScriptedModelServer } from '../../src/testing/index.js';
import { cleanEnv, killAll, REPO_ROOT, spawnNode } from '../cli/child-process.js';
import { TEST_SECRETS } from '../support/secrets.js';

const CHILD = fileURLToPath(new URL('./serving-child.ts', import.meta.url));

let model: ScriptedModelServer | undefined;
let telegram: FakeTelegram | undefined;
let store: Store | undefined;
afterEach(async () => {
  await killAll();
  await store?.close();
  await model?.close();
  await telegram?.close();
  model = telegram = store = undefined;
});

describe('send as the agent across a crash', () => {
  it('sends a message stored before a SIGKILL once, from the next process, and a repeated request sends nothing more', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-send-crash-'));
    mkdirSync(join(dir, 'instructions'));
    writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
    const databaseUrl = `sqlite:${join(dir, 'palaver.db')}`;
    model = await startScriptedModelServer({ script: () => ({ text: 'Hello from the agent.' }) });
    telegram = await startFakeTelegram();
    const config = JSON.stringify({
      model: { name: 'scripted', baseUrl: model.baseUrl, maxRetries: 0, timeoutMs: 60_000 },
      database: { url: databaseUrl },
      agent: { instructionsDir: join(dir, 'instructions') },
      inbox: { leaseMs: 600 },
      server: { adminToken: TEST_SECRETS.adminToken },
      channels: { web: { enabled: false }, telegram: { token: telegram.token, apiRoot: telegram.apiRoot, quietWindowMs: 100, drafts: false } },
    });
    const start = async () => {
      const child = spawnNode(CHILD, [config], { cwd: REPO_ROOT, env: cleanEnv() });
      const [, url] = await child.waitForOutput(/^ready (\S+)$/m, 20_000);
      const send = async (sessionId: string) => {
        const response = await fetch(`${url}/admin/conversations/${sessionId}/messages`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TEST_SECRETS.adminToken}`, 'content-type': 'application/json', 'idempotency-key': 'crash-send-1' },
          body: JSON.stringify({ text: 'An operator here: your refund is on its way.' }),
        });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      };
      return { child, send };
    };

    const first = await start();
    telegram.sendText({ chatId: 5, text: 'where is my refund?' });
    await telegram.waitForMessages(1, { chatId: 5, timeoutMs: 15_000 });
    store = await openStore(databaseUrl, { migrate: false });
    const session = await store.sessions.findByConversation(TELEGRAM_BOT_CHANNEL, '5');

    // Telegram cannot be reached: the message is stored and its part waits in the outbox when the process dies.
    telegram.hang('sendMessage', true);
    const sent = await first.send(session!.id);
    expect(sent).toEqual({ status: 202, body: { messageId: expect.any(String), parts: 1, duplicate: false } });
    await telegram.waitForCall('sendMessage', (call) => call.params['text'] === 'An operator here: your refund is on its way.');
    expect((await first.child.stop('SIGKILL')).signal).toBe('SIGKILL');
    // The fake has seen the killed process's connection close: its held call is given up, not carried out late (which
    // would be Telegram taking it just before the crash, the Bot API's unavoidable repeat, and not this test's case).
    await expect.poll(() => telegram!.hanging('sendMessage'), { timeout: 10_000 }).toBe(0);
    telegram.hang('sendMessage', false);
    expect(telegram.sentTo(5)).toHaveLength(1);

    const second = await start();
    const messages = await telegram.waitForMessages(2, { chatId: 5, timeoutMs: 15_000 });
    expect(messages[1]!.text).toBe('An operator here: your refund is on its way.');
    const parts = () => store!.deliveries.listForReply(sent.body['messageId'] as string).then((records) => records.map((record) => record.state));
    await expect.poll(parts, { timeout: 10_000 }).toEqual(['sent']);
    // The console retries the request it never saw answered: the same key sends nothing more.
    expect(await second.send(session!.id)).toEqual({ status: 202, body: { ...sent.body, duplicate: true } });
    telegram.sendText({ chatId: 5, text: 'thanks' });
    await telegram.waitForMessages(3, { chatId: 5, timeoutMs: 15_000 });
    expect(telegram.sentTo(5).map((message) => message.text)).toEqual([
      'Hello from the agent.',
      'An operator here: your refund is on its way.',
      'Hello from the agent.',
    ]);
    // Once, in the transcript too.
    const transcript = await store.messages.listRecent(session!.id, { limit: 10, audience: 'display' });
    expect(transcript.filter((message) => message.meta?.['operator'] === 'admin')).toHaveLength(1);
    await second.child.stop('SIGTERM');
  }, 90_000);
});
