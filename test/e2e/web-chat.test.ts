import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/logger.js';
import { WebChannel } from '../../src/channels/web/index.js';
import { createHttpApp, startHttpServer, type RunningHttpServer } from '../../src/server/index.js';
import { ScriptedPipeline } from '../server/scripted-pipeline.js';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = '/tmp/palaver-chat.png';

describe('web chat page', () => {
  let browser: Browser;
  let server: RunningHttpServer;
  let handler: ScriptedPipeline;

  /** A web channel on a scripted pipeline, served over HTTP. */
  async function serve(apiKey?: string, showToolDetails = apiKey === undefined): Promise<{ server: RunningHttpServer; pipeline: ScriptedPipeline }> {
    const channel = new WebChannel({ maxInboundChars: 2000, logger: silentLogger(), showToolDetails, apiKey });
    const pipeline = new ScriptedPipeline(channel, { delayMs: 30, reply: 'It is 10:30 in Zurich. Anything else I can check for you?' });
    await channel.start(pipeline);
    const app = createHttpApp({ health: async () => ({}), logger: silentLogger(), apiKey, routes: channel.routes });
    return { server: await startHttpServer(app, { host: '127.0.0.1', port: 0 }), pipeline };
  }

  beforeAll(async () => {
    // A missing browser must fail loudly: a skipped e2e suite looks like a passing one.
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
    ({ server, pipeline: handler } = await serve());
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('streams the reply and the tool line, and keeps the thread across a reload', async () => {
    const page = await browser.newPage({ viewport: { width: 900, height: 640 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(message.text());
    });
    await page.goto(`${server.url}/`);

    await page.getByTestId('message-input').fill('What time is it in Zurich?');
    await page.getByTestId('send-button').click();
    await expect.poll(() => page.getByTestId('send-button').isDisabled()).toBe(true);

    const assistant = page.getByTestId('assistant-message').last();
    await expect.poll(() => assistant.textContent(), { timeout: 10_000 }).toBe('It is 10:30 in Zurich. Anything else I can check for you?');
    expect(await page.getByTestId('tool-line').first().textContent()).toBe('🔧 current_time → 2025-01-01T10:30:00+01:00');
    await expect.poll(() => page.getByTestId('send-button').isEnabled()).toBe(true);
    expect(await page.getByTestId('error-line').isHidden()).toBe(true);
    await page.screenshot({ path: SCREENSHOT });

    const threadId = await page.evaluate<string | null>("localStorage.getItem('palaver.threadId')");
    expect(threadId).toBeTruthy();
    expect(handler.received[0]?.conversationId).toBe(threadId);

    await page.reload();
    // The conversation is rebuilt from the server after the reload, and the next message goes to the same thread.
    await expect.poll(() => page.getByTestId('assistant-message').count()).toBe(1);
    expect(await page.getByTestId('user-message').allTextContents()).toEqual(['What time is it in Zurich?']);
    await page.getByTestId('message-input').fill('And in Tokyo?');
    await page.getByTestId('message-input').press('Enter');
    await expect.poll(() => handler.received.length).toBe(2);
    expect(handler.received[1]?.conversationId).toBe(threadId);
    expect(handler.received[1]?.text).toBe('And in Tokyo?');
    await expect.poll(() => page.getByTestId('assistant-message').count(), { timeout: 10_000 }).toBe(2);
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it('shows a tool call as its friendly label, marked done, without the tool name or result', async () => {
    const { server: plain } = await serve(undefined, false);
    const page = await browser.newPage({ viewport: { width: 900, height: 640 } });
    try {
      await page.goto(`${plain.url}/`);
      await page.getByTestId('message-input').fill('What time is it in Zurich?');
      await page.getByTestId('send-button').click();
      await expect
        .poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 })
        .toBe('It is 10:30 in Zurich. Anything else I can check for you?');
      const line = page.getByTestId('tool-line');
      expect(await line.allTextContents()).toEqual(['Checking the clock… ✓']);
      expect(await line.getAttribute('data-status')).toBe('done');
      const pageText = await page.locator('body').textContent();
      expect(pageText).not.toContain('current_time');
      expect(pageText).not.toContain('2025-01-01');
      await page.screenshot({ path: '/tmp/palaver-chat-tool-label.png' });
    } finally {
      await page.close();
      await plain.close();
    }
  });

  it('removes streamed text the server withdrew and shows the sent reply once, also after a reload', async () => {
    const { server: withdrawing, pipeline } = await serve();
    pipeline.script({ withdrawn: 'A broken half answ', noTool: true });
    try {
      const page = await browser.newPage();
      await page.goto(`${withdrawing.url}/`);
      await page.getByTestId('message-input').fill('Hello?');
      await page.getByTestId('send-button').click();
      await expect.poll(() => page.getByTestId('send-button').isEnabled(), { timeout: 10_000 }).toBe(true);
      expect(await page.getByTestId('assistant-message').allTextContents()).toEqual(['It is 10:30 in Zurich. Anything else I can check for you?']);
      await page.reload();
      await expect.poll(() => page.getByTestId('assistant-message').allTextContents()).toEqual(['It is 10:30 in Zurich. Anything else I can check for you?']);
      await page.close();
    } finally {
      await withdrawing.close();
    }
  });

  it('shows the server refusal in the error line', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 700 } });
    await page.goto(`${server.url}/`);
    await page.getByTestId('message-input').fill('x'.repeat(2001));
    await page.getByTestId('send-button').click();
    const error = page.getByTestId('error-line');
    await expect.poll(() => error.textContent()).toContain('at most 2000');
    expect(await error.isVisible()).toBe(true);
    expect(await page.getByTestId('send-button').isEnabled()).toBe(true);
    // The refused text is handed back for editing rather than left as a sent bubble.
    expect(await page.getByTestId('message-input').inputValue()).toHaveLength(2001);
    expect(await page.getByTestId('user-message').count()).toBe(0);
    await page.getByTestId('message-input').fill('Short enough');
    await page.screenshot({ path: '/tmp/palaver-chat-phone.png' });
    await page.close();
  });

  it('chats by its visitor cookie with no key in the page, also when the server has an API key', async () => {
    const { server: keyed, pipeline } = await serve('secret-key-123');
    try {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${keyed.url}/`);
      await page.getByTestId('message-input').fill('hello');
      await page.getByTestId('send-button').click();
      await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toContain('10:30');
      expect(pipeline.received[0]?.accountId).toMatch(/^visitor:[\w-]{16,}$/);
      // The cookie is HttpOnly: no script of the page can read it; and the page stores no key.
      expect(await page.evaluate<string>('document.cookie')).toBe('');
      const cookies = await context.cookies();
      expect(cookies).toHaveLength(1);
      expect(cookies[0]).toMatchObject({ name: 'palaver_visitor', httpOnly: true, sameSite: 'Lax', secure: false });
      const stored = await page.evaluate<string>('JSON.stringify(Object.entries(localStorage))');
      expect(stored).not.toContain('secret-key-123');
      expect(stored).not.toMatch(/apiKey|transcript/);
      await context.close();
    } finally {
      await keyed.close();
    }
  });

  it("lists the visitor's conversations and rebuilds one from the server; another visitor sees none of them", async () => {
    const { server: listing } = await serve();
    try {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${listing.url}/`);
      await page.getByTestId('message-input').fill('First conversation');
      await page.getByTestId('send-button').click();
      await expect.poll(() => page.getByTestId('assistant-message').count(), { timeout: 10_000 }).toBe(1);
      await expect.poll(() => page.getByTestId('send-button').isEnabled()).toBe(true);
      await page.getByTestId('new-thread').click();
      await page.getByTestId('message-input').fill('Second conversation');
      await page.getByTestId('send-button').click();
      await expect.poll(() => page.getByTestId('conversation').count(), { timeout: 10_000 }).toBe(2);
      expect(await page.getByTestId('conversation').allTextContents()).toEqual(['Second conversation', 'First conversation']);

      await page.getByTestId('conversation').last().click();
      await expect.poll(() => page.getByTestId('user-message').allTextContents()).toEqual(['First conversation']);
      expect(await page.getByTestId('assistant-message').count()).toBe(1);

      // A second browser (another visitor) has its own cookie and no conversations; the first's thread is refused.
      const other = await browser.newContext();
      const stranger = await other.newPage();
      await stranger.goto(`${listing.url}/`);
      await expect.poll(() => stranger.evaluate<number>("document.querySelectorAll('[data-testid=conversation]').length")).toBe(0);
      const threadId = await page.evaluate<string>("localStorage.getItem('palaver.threadId')");
      const status = await stranger.evaluate(async (id) => (await fetch(`conversations/messages?id=${encodeURIComponent(id)}`)).status, threadId);
      expect(status).toBe(403);
      await other.close();
      await context.close();
    } finally {
      await listing.close();
    }
  });
});
