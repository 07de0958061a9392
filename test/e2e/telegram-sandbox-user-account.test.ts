import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTelegramSandbox, type TelegramSandbox } from '../../src/dev/telegram-sandbox/index.js';
import type { Palaver } from '../../src/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

// The owner's side of `palaver dev --telegram-user`: a real Palaver (SQLite file, scripted model over HTTP) whose
// telegramUser channel runs the real mtcute client against the sandbox's fake MTProto Telegram, signed in as the
// owner, and the sandbox page in Chromium where one writes to the account as a person, or as the owner.
const CHROMIUM = '/usr/bin/chromium';
// Markdown becomes entities; the tag is the model's text and must stay text.
const REPLY = 'We are open **until six**. <b>not html</b>';
const SHOWN = 'We are open until six. <b>not html</b>';
// The sandbox's people (the default ones), each in a private chat with the account.
const ada = 700_001;
const boris = 700_002;

let browser: Browser;
let sandbox: TelegramSandbox | undefined;
let harness: Harness | undefined;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`apt-get install chromium\` to run the browser tests.`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
});

afterAll(async () => {
  await browser?.close();
});

afterEach(async () => {
  await harness?.close();
  await sandbox?.close();
  harness = undefined;
  sandbox = undefined;
});

async function write(page: Page, text: string): Promise<void> {
  await page.getByTestId('input').fill(text);
  await page.getByTestId('input').press('Enter');
}

/** The texts Palaver stored in the account's chat with `chatId` (both sides), oldest first. */
async function stored(palaver: Palaver, chatId: number): Promise<string[]> {
  const session = await palaver.store.sessions.findByConversation('telegram-user', String(chatId));
  if (!session) return [];
  return (await palaver.store.messages.listRecent(session.id, { limit: 20 })).map((message) => message.content);
}

describe('Telegram sandbox: the owner of a Telegram user account', () => {
  it('shows what the account sends to a person, and that the agent steps back in a chat once the owner writes there (390 px)', async () => {
    sandbox = await startTelegramSandbox({ userAccount: { ownerTakeoverMinutes: () => 30 } });
    const account = sandbox.userAccount!;
    harness = await createHarness(() => ({ text: REPLY }));
    const palaver = await harness.start(
      {
        channels: {
          web: { enabled: false },
          telegram: { token: sandbox.token, apiRoot: sandbox.apiRoot, quietWindowMs: 100 },
          telegramUser: { enabled: true, ...account.settings, quietWindowMs: 100 },
        },
      },
      { telegramUserNetwork: account.network },
    );

    const page = await browser.newPage({ viewport: { width: 390, height: 800 } });
    await page.goto(sandbox.url);
    await page.locator('body[data-connected=yes]').waitFor();
    await page.getByTestId('view').selectOption('account');
    expect(await page.getByTestId('bot-name').textContent()).toBe('Owner');

    // A person writes to the owner's account: the agent answers as the account, formatted from its entities; the
    // person's message shows read, and the account's text stays text (no element made from it).
    await write(page, 'Are you open today?');
    const answers = page.locator('[data-testid=message][data-from=account]');
    await answers.first().waitFor();
    expect(await answers.first().getByTestId('text').textContent()).toBe(SHOWN);
    expect(await answers.first().locator('strong').textContent()).toBe('until six');
    expect(await answers.first().locator('b').count()).toBe(0);
    await page.locator('[data-testid=message][data-from=person][data-read=yes]', { hasText: 'Are you open today?' }).waitFor();

    // The owner writes in that chat from their phone: shown as theirs, with the step-back the agent now keeps.
    await page.getByTestId('as-owner').check();
    await write(page, 'I will take this one myself.');
    await page.locator('[data-testid=message][data-from=owner]', { hasText: 'I will take this one myself.' }).waitFor();
    expect(await page.getByTestId('step-back').textContent()).toMatch(/steps back in this chat until \d/);

    // The person writes again: Palaver stores it for later, and the account sends nothing in that chat.
    await page.getByTestId('as-owner').uncheck();
    await write(page, 'Great, and tomorrow?');
    await expect.poll(() => stored(palaver, ada), { timeout: 10_000 }).toContain('Great, and tomorrow?');

    // Another chat goes on as before: Boris is answered, and by then Ada still has only the first answer.
    await page.getByTestId('person').selectOption({ label: 'Boris' });
    await write(page, 'Hello, is this the salon?');
    await answers.first().waitFor();
    expect(await answers.first().getByTestId('text').textContent()).toBe(SHOWN);
    expect(account.telegram.sent(boris).map((message) => message.text)).toEqual([SHOWN]);
    expect(account.telegram.sent(ada)).toHaveLength(1);
    await page.getByTestId('person').selectOption({ label: 'Ada' });
    expect(await answers.count()).toBe(1);
    expect(await page.getByTestId('step-back').count()).toBe(1);

    expect(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    await page.screenshot({ path: 'test-artifacts/telegram-sandbox-user-account-390.png' });
    await page.close();
  });

  it('refuses messages to the account when the sandbox runs without its user-account side', async () => {
    sandbox = await startTelegramSandbox();
    expect(sandbox.userAccount).toBeUndefined();
    const response = await fetch(new URL('/api/account/messages', sandbox.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chatId: 700_001, text: 'hello', asOwner: false }),
    });
    expect(response.status).toBe(400);
  });
});
