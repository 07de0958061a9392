import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/logger.js';
import { WebChannel } from '../../src/channels/web/index.js';
import { createHttpApp, startHttpServer, type RunningHttpServer } from '../../src/server/index.js';
import { ScriptedPipeline } from '../server/scripted-pipeline.js';

const CHROMIUM = '/usr/bin/chromium';
const REPLY = 'Here is **bold** and [a link](https://example.org/docs).\n\n- first\n- second\n\n<script>alert(1)</script> <img src=x onerror="alert(2)">';

describe('web chat page: how replies look', () => {
  let browser: Browser;
  let server: RunningHttpServer;

  beforeAll(async () => {
    // A missing browser must fail loudly: a skipped e2e suite looks like a passing one.
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`apt-get install chromium\` to run the browser tests.`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
    const channel = new WebChannel({ maxInboundChars: 2000, logger: silentLogger(), agentName: 'Ada <Support>', accentColor: '#c2185b', logoUrl: '/logo.svg' });
    await channel.start(new ScriptedPipeline(channel, { delayMs: 5, reply: REPLY }));
    const app = createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes });
    server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('names the agent from its config, escaped, with its logo and accent colour', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 760 } });
    await page.goto(`${server.url}/`);
    expect(await page.title()).toBe('Ada <Support>');
    expect(await page.locator('h1').textContent()).toBe('Ada <Support>');
    expect(await page.getByTestId('agent-logo').getAttribute('src')).toBe('/logo.svg');
    expect(await page.getByTestId('send-button').evaluate((button) => button.ownerDocument.defaultView?.getComputedStyle(button).backgroundColor)).toBe(
      'rgb(194, 24, 91)',
    );
    await page.close();
  });

  it('speaks the visitor’s language in its own texts, English when it has not got theirs', async () => {
    const russian = await browser.newContext({ locale: 'ru-RU', viewport: { width: 390, height: 760 } });
    const page = await russian.newPage();
    await page.goto(`${server.url}/`);
    expect(await page.getByTestId('send-button').textContent()).toBe('Отправить');
    expect(await page.getByTestId('new-thread').textContent()).toBe('Новый чат');
    expect(await page.getByTestId('message-input').getAttribute('placeholder')).toBe('Напишите сообщение…');
    expect(await page.locator('html').getAttribute('lang')).toBe('ru');
    await page.screenshot({ path: 'test-artifacts/web-chat-390-ru.png' });
    await russian.close();

    const german = await browser.newContext({ locale: 'de-DE' });
    const fallback = await german.newPage();
    await fallback.goto(`${server.url}/`);
    expect(await fallback.getByTestId('send-button').textContent()).toBe('Send');
    await german.close();
  });

  it('renders the agent’s Markdown, shows HTML from the model as text, and keeps the person’s text plain', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 760 } });
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto(`${server.url}/`);
    await page.getByTestId('message-input').fill('Show me **this** as I typed it');
    await page.getByTestId('send-button').click();

    const assistant = page.getByTestId('assistant-message').last();
    await expect.poll(() => assistant.locator('strong').count(), { timeout: 10_000 }).toBe(1);
    expect(await assistant.locator('strong').textContent()).toBe('bold');
    expect(await assistant.locator('li').allTextContents()).toEqual(['first', 'second']);
    const link = assistant.locator('a');
    expect(await link.getAttribute('href')).toBe('https://example.org/docs');
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
    // The model's HTML is text on the screen, never elements.
    expect(await assistant.locator('script, img').count()).toBe(0);
    expect(await assistant.textContent()).toContain('<script>alert(1)</script>');
    expect(await assistant.textContent()).toContain('<img src=x onerror="alert(2)">');
    expect(await page.getByTestId('user-message').textContent()).toBe('Show me **this** as I typed it');
    // Each bubble shows its local time beside (not inside) its text.
    expect(await page.getByTestId('user-message').getAttribute('data-time')).toMatch(/^\d{2}:\d{2}/);
    expect(await assistant.getAttribute('data-time')).toMatch(/^\d{2}:\d{2}/);

    // The stored transcript is rendered the same way after a reload.
    await page.reload();
    await expect.poll(() => page.getByTestId('assistant-message').locator('strong').count(), { timeout: 10_000 }).toBe(1);
    expect(await page.getByTestId('assistant-message').locator('script, img').count()).toBe(0);
    expect(await page.getByTestId('assistant-message').getAttribute('data-time')).toMatch(/^\d{2}:\d{2}/);
    await page.screenshot({ path: 'test-artifacts/web-chat-390.png', fullPage: true });
    expect(dialogs).toEqual([]);
    await page.close();
  });
});
