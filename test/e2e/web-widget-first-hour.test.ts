import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Frame, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/server/index.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';
import { solidPng } from '../support/png.js';

// What a team sees in its first hour with the widget on its site: its colour everywhere, a greeting with suggested
// questions, a count of replies that came while the chat was closed, and photos a visitor attaches, which the model
// sees and the conversation keeps. Chromium (Debian's), a shop on another origin, Palaver on SQLite, the scripted model.

const CHROMIUM = '/usr/bin/chromium';
const IMAGES = 'test-artifacts';
const ACCENT = '#0a7d32';
const ACCENT_RGB = 'rgb(10, 125, 50)';
const GREETING = 'Hi! I am the shop assistant. Ask me about orders and shipping.';
const PROMPTS = ['Do you ship to Zurich?', 'When do you open?'];

async function siteServer(html: () => string): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function chatFrame(page: Page): Promise<Frame> {
  await expect.poll(() => page.frames().some((frame) => frame.url().includes('/embed')), { timeout: 10_000 }).toBe(true);
  const frame = page.frames().find((candidate) => candidate.url().includes('/embed'))!;
  await frame.waitForSelector('[data-testid="message-input"]');
  return frame;
}

/** A computed colour of the element, as the browser resolved it (the function runs in the page: the property goes as its argument). */
function colourOf(locator: Locator, property: 'backgroundColor' | 'color' = 'backgroundColor'): Promise<string> {
  return locator.evaluate((node, name) => node.ownerDocument.defaultView!.getComputedStyle(node)[name], property);
}

describe('the widget in its first hour', { timeout: 90_000 }, () => {
  let browser: Browser;
  let harness: Harness;
  let palaver: RunningHttpServer;
  let shop: { server: Server; origin: string };
  let release: () => void = () => {};

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`apt-get install chromium\` to run the browser tests.`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
    // A message starting with "hold" waits until the test releases it: the reply comes while the panel is closed.
    harness = await createHarness(async (call) => {
      const text = userTexts(call).at(-1) ?? '';
      if (text.startsWith('hold')) await new Promise<void>((resolve) => (release = resolve));
      return { text: `echo: ${text}` };
    });
    shop = await siteServer(
      () => `<!doctype html><html><head><meta charset="utf-8"><title>Shop</title></head>
      <body style="font: 16px system-ui; margin: 0"><header style="background:#333;color:#fff;padding:14px 24px"><b>Example Shop</b></header>
      <main style="padding:24px"><h1>Spring sale</h1></main><script src="${palaver.url}/widget.js" defer></script></body></html>`,
    );
    const app = await harness.start({
      agent: { name: 'Shop assistant' },
      channels: {
        web: {
          // No data-accent-color on the tag: the configured colour is the launcher's too.
          accentColor: ACCENT,
          greeting: { en: GREETING, de: 'Hallo! Ich bin der Shop-Assistent.' },
          suggestedPrompts: PROMPTS,
          embed: { allowedOrigins: [shop.origin] },
        },
      },
    });
    palaver = await app.serve({ host: '127.0.0.1', port: 0 });
    mkdirSync(IMAGES, { recursive: true });
  });

  afterAll(async () => {
    release();
    await browser?.close();
    await palaver?.close();
    await new Promise((resolve) => shop?.server.close(resolve));
    await harness?.close();
  });

  for (const width of [1280, 390]) {
    it(`at ${width} px: the accent, the greeting and a suggested prompt, the unread badge, an attached photo kept after a reload`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 800 }, locale: 'en-US' });
      const page = await context.newPage();
      const pageErrors: string[] = [];
      page.on('pageerror', (error) => pageErrors.push(error.message));
      await page.goto(`${shop.origin}/`);

      // The launcher takes channels.web.accentColor.
      const launcher = page.getByTestId('widget-launcher');
      expect(await colourOf(launcher)).toBe(ACCENT_RGB);
      await launcher.click();
      const frame = await chatFrame(page);

      // The header and Send carry the accent; before the first message, the greeting and the suggested prompts.
      expect(await colourOf(frame.locator('.chat-header'))).toBe(ACCENT_RGB);
      expect(await colourOf(frame.getByTestId('send-button'))).toBe(ACCENT_RGB);
      await expect.poll(() => frame.getByTestId('greeting').textContent()).toBe(GREETING);
      expect(await frame.getByTestId('suggested-prompt').allTextContents()).toEqual(PROMPTS);
      expect(await colourOf(frame.getByTestId('suggested-prompt').first(), 'color')).toBe(ACCENT_RGB);
      await page.screenshot({ path: `${IMAGES}/widget-welcome-${width}.png` });

      // A prompt clicked is the visitor's message; the greeting goes once the conversation has begun.
      await frame.getByTestId('suggested-prompt').first().click();
      await expect.poll(() => frame.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe(`echo: ${PROMPTS[0]}`);
      expect(await frame.getByTestId('user-message').first().textContent()).toContain(PROMPTS[0]);
      expect(await frame.getByTestId('welcome').isVisible()).toBe(false);
      expect(await colourOf(frame.getByTestId('user-message').first())).toBe(ACCENT_RGB);

      // A reply that comes while the panel is closed shows as a count on the launcher, cleared when it opens.
      await frame.getByTestId('message-input').fill('hold the line, please');
      await frame.getByTestId('send-button').click();
      await expect.poll(() => harness.model.calls.some((call) => userTexts(call).at(-1) === 'hold the line, please')).toBe(true);
      await frame.getByTestId('close-embed').click();
      await expect.poll(() => page.getByTestId('widget-panel').isVisible()).toBe(false);
      expect(await page.getByTestId('widget-unread').isVisible()).toBe(false);
      release();
      await expect.poll(() => page.getByTestId('widget-unread').textContent(), { timeout: 10_000 }).toBe('1');
      expect(await page.getByTestId('widget-unread').isVisible()).toBe(true);
      expect(await launcher.getAttribute('aria-label')).toBe('Open chat (1 unread)');
      await page.screenshot({ path: `${IMAGES}/widget-unread-${width}.png` });
      await launcher.click();
      expect(await page.getByTestId('widget-unread').isVisible()).toBe(false);
      expect(await launcher.getAttribute('aria-label')).toBe('Close chat');

      // A photo attached: shown at once, seen by the model as an image part, and shown again after a reload.
      const png = solidPng(64, 48, [245, 160, 20]);
      await frame.getByTestId('file-input').setInputFiles({ name: 'parcel.png', mimeType: 'image/png', buffer: png });
      await expect.poll(() => frame.getByTestId('pending-file').count()).toBe(1);
      await frame.getByTestId('message-input').fill('My parcel arrived like this');
      await frame.getByTestId('send-button').click();
      await expect
        .poll(() => frame.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 })
        .toBe('echo: My parcel arrived like this\n[image: parcel.png]');
      const body = harness.model.calls.at(-1)!.body as { messages: { role: string; content: unknown }[] };
      expect(body.messages.filter((message) => message.role === 'user').at(-1)!.content).toEqual([
        { type: 'text', text: 'My parcel arrived like this\n[image: parcel.png]' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
      ]);
      expect(await frame.getByTestId('pending-file').count()).toBe(0);

      await page.reload();
      await page.getByTestId('widget-launcher').click();
      const reloaded = await chatFrame(page);
      const image = reloaded.getByTestId('attached-image');
      await expect.poll(() => image.count(), { timeout: 10_000 }).toBe(1);
      await expect.poll(() => image.evaluate((node) => (node as unknown as { naturalWidth: number }).naturalWidth), { timeout: 10_000 }).toBe(64);
      expect(await image.getAttribute('alt')).toBe('parcel.png');
      expect(await reloaded.getByTestId('user-message').last().textContent()).toContain('My parcel arrived like this');
      expect(await reloaded.getByTestId('welcome').isVisible()).toBe(false);
      // The person's bubbles keep the accent after the reload (from the server's page, not the widget's address).
      expect(await colourOf(reloaded.getByTestId('user-message').last())).toBe(ACCENT_RGB);
      await page.screenshot({ path: `${IMAGES}/widget-attachment-${width}.png` });

      expect(pageErrors).toEqual([]);
      await context.close();
    });
  }
});
