import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTelegramSandbox, type TelegramSandbox } from '../../src/dev/telegram-sandbox/index.js';
import type { ModelScript } from '../../src/testing/index.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';

// The Telegram sandbox of `palaver dev --telegram` as a person uses it: a real Palaver (SQLite file, scripted model
// over HTTP) whose bot channel talks to the sandbox's fake Bot API through grammY, and the sandbox page in Chromium.
const CHROMIUM = '/usr/bin/chromium';

let browser: Browser;
let sandbox: TelegramSandbox | undefined;
let harness: Harness | undefined;

beforeAll(async () => {
  // A missing browser must fail loudly: a skipped e2e suite looks like a passing one.
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

/** A sandbox and a Palaver whose `channels.telegram` points at it, as the docs say to do. */
async function start(script: ModelScript, config: Record<string, unknown> = {}): Promise<TelegramSandbox> {
  sandbox = await startTelegramSandbox();
  harness = await createHarness(script);
  await harness.start({
    ...config,
    channels: { web: { enabled: false }, telegram: { token: sandbox.token, apiRoot: sandbox.apiRoot, quietWindowMs: 100 } },
  });
  return sandbox;
}

async function openPage(url: string, width: number): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 800 } });
  await page.goto(url);
  await page.locator('body[data-connected=yes]').waitFor();
  return page;
}

async function write(page: Page, text: string): Promise<void> {
  await page.getByTestId('input').fill(text);
  await page.getByTestId('input').press('Enter');
}

/** Nothing sticks out sideways: the page fits the screen it is on. */
async function fitsWidth(page: Page): Promise<boolean> {
  return page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');
}

describe('Telegram sandbox page', () => {
  it('shows the bot typing while the model thinks, then its Markdown reply formatted from entities (390 px)', async () => {
    let answer: () => void = () => {};
    const thinking = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const { url } = await start(async () => {
      await thinking;
      return { text: 'Here is **bold** and [a link](https://example.org/docs).' };
    });
    const page = await openPage(url, 390);
    await write(page, 'hello bot');
    await page.locator('[data-testid=message][data-from=person]', { hasText: 'hello bot' }).waitFor();
    // The model has not answered yet: the bot's chat action is what shows.
    await page.locator('[data-testid=status][data-typing=yes]', { hasText: 'typing…' }).waitFor();
    answer();

    const reply = page.locator('[data-testid=message][data-from=bot]');
    await reply.waitFor();
    expect(await reply.getByTestId('text').textContent()).toBe('Here is bold and a link.');
    expect(await reply.locator('strong').textContent()).toBe('bold');
    const link = reply.locator('a');
    expect(await link.textContent()).toBe('a link');
    expect(await link.getAttribute('href')).toBe('https://example.org/docs');
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
    expect(await fitsWidth(page)).toBe(true);
    await page.screenshot({ path: 'test-artifacts/telegram-sandbox-390.png' });
    await page.close();
  });

  it('shows a plan of actions: typing, two messages in order and the reaction on the person’s message (1280 px)', async () => {
    const { url } = await start(
      (call) => {
        const asked = Number(/^\[message_id: (\d+)\] /.exec(lastUserText(call) ?? '')?.[1]);
        return {
          text: JSON.stringify({
            actions: [
              { type: 'add_reaction', emoji: '👍', message_id: asked },
              { type: 'fake_typing', seconds: 1 },
              { type: 'send_messages', messages: ['Hello!', 'How can I help?'] },
            ],
          }),
        };
      },
      { agent: { replies: 'actions', actions: { typingCharsPerSecond: 0 } } },
    );
    const page = await openPage(url, 1280);
    await write(page, 'hi there');
    const mine = page.locator('[data-testid=message][data-from=person]', { hasText: 'hi there' });
    await mine.getByTestId('reaction').waitFor();
    expect(await mine.getByTestId('reaction').textContent()).toBe('👍');
    await page.locator('[data-testid=status][data-typing=yes]').waitFor();
    const replies = page.locator('[data-testid=message][data-from=bot]');
    await replies.nth(1).waitFor();
    expect(await replies.getByTestId('text').allTextContents()).toEqual(['Hello!', 'How can I help?']);
    expect(await fitsWidth(page)).toBe(true);
    await page.screenshot({ path: 'test-artifacts/telegram-sandbox-1280.png' });
    await page.close();
  });

  it('shows HTML in a bot text as text, and a pressed inline button reaches the bot as a callback_query', async () => {
    sandbox = await startTelegramSandbox();
    const page = await openPage(sandbox.url, 390);
    const { people } = (await (await fetch(`${sandbox.url}api/info`)).json()) as { people: { id: number }[] };
    const ada = people[0];
    // What any bot could send: raw HTML without parse_mode, and a keyboard with a callback button.
    const hostile = '<script>window.pwned = 1</script><b>not bold</b> <img src=x onerror="window.pwned = 2">';
    const sent = await fetch(`${sandbox.apiRoot}/bot${sandbox.token}/sendMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        chat_id: ada!.id,
        text: hostile,
        reply_markup: {
          inline_keyboard: [
            [
              { text: 'Yes', callback_data: 'answer:yes' },
              { text: 'No', callback_data: 'answer:no' },
            ],
          ],
        },
      }),
    });
    expect(sent.status).toBe(200);

    const message = page.locator('[data-testid=message][data-from=bot]');
    await message.waitFor();
    expect(await message.getByTestId('text').textContent()).toBe(hostile);
    expect(await message.locator('script, b, img').count()).toBe(0);
    expect(await page.evaluate<unknown>('window.pwned')).toBeUndefined();

    await message.getByTestId('button').filter({ hasText: 'Yes' }).click();
    await page.getByTestId('pressed').waitFor();
    const update = sandbox.telegram.updates.find((candidate) => candidate['callback_query'] !== undefined);
    expect(update?.['callback_query']).toMatchObject({ data: 'answer:yes', from: { id: ada!.id }, message: { text: hostile } });
    await page.close();
  });

  it('refuses requests under another host name and form posts from other sites', async () => {
    sandbox = await startTelegramSandbox();
    const port = new URL(sandbox.url).port;
    // fetch sets Host itself: a plain request says the name a rebinding page would.
    const rebound = await new Promise<number>((resolve, reject) =>
      request(sandbox!.url, { headers: { host: `attacker.example:${port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .on('error', reject)
        .end(),
    );
    expect(rebound).toBe(421);
    const form = await fetch(`${sandbox.url}api/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'chatId=700001&text=hi',
    });
    expect(form.status).toBe(415);
    expect(sandbox.telegram.updates).toEqual([]);
  });
});
