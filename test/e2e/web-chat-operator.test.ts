import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

const CHROMIUM = '/usr/bin/chromium';
// An operator's text that would run script if the page put it in as HTML.
const OPERATOR_TEXT = 'Hello, I am Olena. <img src=x onerror="window.__xss=1"><b>Your refund</b> is on its way.';

let browser: Browser;
let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`apt-get install chromium\` to run the browser tests.`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  await server?.close();
  await harness?.close();
  harness = server = undefined;
});

/** A Palaver with the web chat and the admin API, on a SQLite file, the model echoing the person's last words. */
async function start(): Promise<{ palaver: Palaver; base: string; admin: (path: string, body?: unknown) => Promise<Response> }> {
  harness = await createHarness((call) => ({ text: `echo: ${userTexts(call).at(-1)}` }));
  const palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken } });
  server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  const base = server.url;
  const admin = (path: string, body?: unknown) =>
    fetch(`${base}/admin${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_SECRETS.adminToken}`, 'content-type': 'application/json', 'x-palaver-actor': 'Olena' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  return { palaver, base, admin };
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByTestId('message-input').fill(text);
  await page.getByTestId('send-button').click();
}

const heldLogged = (count: number) => () =>
  harness!.logs.filter((line) => line['msg'] === 'conversation paused by an operator: messages stored, held until it is resumed').length >= count;

describe('web chat: a person steps in', () => {
  for (const viewport of [
    { width: 1280, height: 800 },
    { width: 390, height: 844 },
  ]) {
    it(`at ${viewport.width} px: the operator's message appears live and after a reload, named as a person's; paused, the page waits for a person, not the agent`, async () => {
      const { palaver, base, admin } = await start();
      const page = await browser.newPage({ viewport });
      const pageErrors: string[] = [];
      page.on('pageerror', (error) => pageErrors.push(error.message));
      await page.goto(`${base}/`);

      await send(page, 'where is my refund?');
      await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe('echo: where is my refund?');
      const threadId = await page.evaluate<string | null>("localStorage.getItem('palaver.threadId')");
      const session = await palaver.store.sessions.findByConversation('web', threadId!);

      // The operator takes the conversation: the open page says a person will answer.
      expect((await admin(`/conversations/${session!.id}/pause`)).status).toBe(200);
      await expect.poll(() => page.getByTestId('waiting-line').textContent()).toBe('A person will answer here.');
      expect(await page.getByTestId('waiting-line').isVisible()).toBe(true);

      // The operator writes: it appears at once, named as the support team, as text.
      expect((await admin(`/conversations/${session!.id}/messages`, { text: OPERATOR_TEXT })).status).toBe(202);
      const operator = page.getByTestId('operator-message');
      await expect.poll(() => operator.count()).toBe(1);
      expect(await operator.getByTestId('operator-author').textContent()).toBe('Support team');
      expect(await operator.getByTestId('operator-text').textContent()).toBe(OPERATOR_TEXT);
      expect(await operator.locator('img, b').count()).toBe(0);

      // The person answers while paused: shown, waiting for a person, never "Thinking…"; the model is not asked.
      const calls = harness!.model.calls.length;
      await send(page, 'thank you, is it today?');
      await expect.poll(() => page.getByTestId('user-message').last().textContent()).toBe('thank you, is it today?');
      expect(await page.getByTestId('thinking').count()).toBe(0);
      await expect.poll(() => page.getByTestId('send-button').isEnabled()).toBe(true);
      await expect.poll(heldLogged(1), { timeout: 5_000 }).toBe(true);
      expect(await page.getByTestId('thinking').count()).toBe(0);
      expect(await page.getByTestId('waiting-line').isVisible()).toBe(true);
      expect(await page.getByTestId('error-line').isHidden()).toBe(true);
      expect(harness!.model.calls.length).toBe(calls);
      await page.screenshot({ path: `/tmp/shots/operator-${viewport.width}.png` });

      // After a reload: the same, from the store.
      await page.reload();
      await expect.poll(() => page.getByTestId('operator-message').count()).toBe(1);
      expect(await page.getByTestId('operator-author').textContent()).toBe('Support team');
      expect(await page.getByTestId('operator-text').textContent()).toBe(OPERATOR_TEXT);
      expect(await page.getByTestId('user-message').allTextContents()).toEqual(['where is my refund?', 'thank you, is it today?']);
      await expect.poll(() => page.getByTestId('waiting-line').isVisible()).toBe(true);
      expect(await page.evaluate('window.__xss')).toBeUndefined();

      // Handed back: the waiting line goes, the held message is answered on the open page, and the agent answers again.
      expect((await admin(`/conversations/${session!.id}/resume`)).status).toBe(200);
      await expect.poll(() => page.getByTestId('waiting-line').isHidden()).toBe(true);
      await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe('echo: thank you, is it today?');
      await send(page, 'great, bye');
      await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe('echo: great, bye');
      expect(harness!.model.calls.length).toBe(calls + 2);
      expect(pageErrors).toEqual([]);
      await page.close();
    }, 60_000);
  }

  it('shows the operator in the widget frame too, live', async () => {
    const { palaver, base, admin } = await start();
    const page = await browser.newPage({ viewport: { width: 390, height: 700 } });
    await page.goto(`${base}/embed`);
    await send(page, 'hi from the widget');
    await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe('echo: hi from the widget');
    const threadId = await page.evaluate<string | null>("localStorage.getItem('palaver.threadId')");
    const session = await palaver.store.sessions.findByConversation('web', threadId!);
    expect((await admin(`/conversations/${session!.id}/messages`, { text: 'A person here: how can I help?' })).status).toBe(202);
    await expect.poll(() => page.getByTestId('operator-text').textContent()).toBe('A person here: how can I help?');
    expect(await page.getByTestId('operator-author').textContent()).toBe('Support team');
  });
});
