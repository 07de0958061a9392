import { existsSync, mkdirSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/server/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { echoScript } from '../security/attack-kit.js';

const CHROMIUM = '/usr/bin/chromium';
// The screenshots in docs/images/ are copies of these (a test run must not change tracked files).
const IMAGES = 'test-artifacts';

// A phone-sized screen (390 × 844): the conversation list is a drawer behind the menu button.
describe('web chat page on a small screen', { timeout: 60_000 }, () => {
  let browser: Browser;
  let harness: Harness;
  let server: RunningHttpServer;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`apt-get install chromium\` to run the browser tests.`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    harness = await createHarness(echoScript);
    const palaver = await harness.start({ agent: { name: 'Ada' } });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    mkdirSync(IMAGES, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await harness?.close();
  });

  it('opens the conversation list from the menu button, and choosing a conversation shows it and closes the list', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${server.url}/`);

    // Two conversations: the first one, then a new chat.
    await page.getByTestId('message-input').fill('first conversation');
    await page.getByTestId('send-button').click();
    await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe('echo: first conversation');
    await expect.poll(() => page.getByTestId('send-button').isEnabled()).toBe(true);
    await page.getByTestId('new-thread').click();
    await page.getByTestId('message-input').fill('second conversation');
    await page.getByTestId('send-button').click();
    await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe('echo: second conversation');
    await expect.poll(() => page.getByTestId('send-button').isEnabled()).toBe(true);

    // Closed, the list takes no room; the menu button says so.
    const menu = page.getByTestId('menu-button');
    const list = page.getByTestId('conversation-list');
    expect(await list.isVisible()).toBe(false);
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    expect(await menu.getAttribute('aria-label')).toBe('Show conversations');

    await menu.click();
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    await expect.poll(() => page.getByTestId('conversation').count(), { timeout: 10_000 }).toBe(2);
    expect(await list.isVisible()).toBe(true);
    // Focus moves into the list, onto the open conversation.
    expect(await page.evaluate<string>('document.activeElement.className')).toContain('current');
    await page.screenshot({ path: `${IMAGES}/chat-390-conversations.png` });

    // Escape closes it and gives focus back to the menu button; a tap beside it closes it too.
    await page.keyboard.press('Escape');
    expect(await list.isVisible()).toBe(false);
    expect(await page.evaluate<string>('document.activeElement.id')).toBe('menu');
    await menu.click();
    await page.mouse.click(370, 400);
    expect(await list.isVisible()).toBe(false);
    expect(await menu.getAttribute('aria-expanded')).toBe('false');

    // Choosing the older conversation shows its messages and closes the list.
    await menu.click();
    await page.getByTestId('conversation').filter({ hasText: 'first conversation' }).click();
    await expect.poll(() => page.getByTestId('user-message').allTextContents(), { timeout: 10_000 }).toEqual(['first conversation']);
    expect(await page.getByTestId('assistant-message').allTextContents()).toEqual(['echo: first conversation']);
    expect(await list.isVisible()).toBe(false);
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    // The chat takes input again (it was inert behind the open list), in the chosen conversation.
    await page.getByTestId('message-input').fill('back in the first');
    await page.getByTestId('message-input').press('Enter');
    await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe('echo: back in the first');
    expect(await page.getByTestId('user-message').allTextContents()).toEqual(['first conversation', 'back in the first']);
    expect(pageErrors).toEqual([]);
    await context.close();
  });

  it('names the menu button in the visitor’s language, and shows no menu button on a wide screen', async () => {
    const ukrainian = await browser.newContext({ locale: 'uk-UA', viewport: { width: 390, height: 844 } });
    const page = await ukrainian.newPage();
    await page.goto(`${server.url}/`);
    expect(await page.getByTestId('menu-button').getAttribute('aria-label')).toBe('Показати розмови');
    await ukrainian.close();

    const wide = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    await wide.goto(`${server.url}/`);
    expect(await wide.getByTestId('menu-button').isVisible()).toBe(false);
    expect(await wide.locator('#sidebar').isVisible()).toBe(true);
    await wide.close();
  });
});
