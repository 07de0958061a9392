import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/server/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { echoScript, send, userToken } from '../security/attack-kit.js';

const CHROMIUM = '/usr/bin/chromium';
// The screenshots in docs/images/ are copies of these (a test run must not change tracked files).
const IMAGES = 'test-artifacts';
const TOKEN_SECRET = 'widget-test-user-token-secret-0123456789';

/** A team's own site on its own port (another origin than Palaver's): `pageFor(path)` is the HTML it serves. */
async function siteServer(pageFor: (path: string) => string): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(pageFor(req.url ?? '/'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function shopPage(palaverUrl: string, attributes: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>Shop</title>
    <style>body { font: 16px system-ui, sans-serif; margin: 0; background: #fafafa; color: #222 } header { background: #333; color: #fff; padding: 14px 24px }
    main { padding: 24px; max-width: 560px } button { background: red !important; width: 10px !important }</style></head>
    <body><header><b>Example Shop</b></header><main><h1>Spring sale</h1><p>Everything 20% off this week. Questions? Ask our assistant in the corner.</p></main>
    <script src="${palaverUrl}/widget.js" ${attributes}></script></body></html>`;
}

/** The same server under the name `localhost`: for the browser, another site than `127.0.0.1` (ports aside). */
function otherSite(origin: string): string {
  return origin.replace('127.0.0.1', 'localhost');
}

/** The chat's frame inside the widget, once it has loaded. */
async function chatFrame(page: Page): Promise<Frame> {
  await expect.poll(() => page.frames().some((frame) => frame.url().includes('/embed')), { timeout: 10_000 }).toBe(true);
  const frame = page.frames().find((candidate) => candidate.url().includes('/embed'))!;
  await frame.waitForSelector('[data-testid="message-input"]');
  return frame;
}

async function say(frame: Frame, text: string): Promise<void> {
  await frame.getByTestId('message-input').fill(text);
  await frame.getByTestId('send-button').click();
  await expect.poll(() => frame.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe(`echo: ${text}`);
  await expect.poll(() => frame.getByTestId('send-button').isEnabled()).toBe(true);
}

describe('the chat widget on another site', { timeout: 60_000 }, () => {
  let browser: Browser;
  let harness: Harness;
  let palaver: RunningHttpServer;
  let shop: { server: Server; origin: string };
  let stranger: { server: Server; origin: string };
  let shopPageFor: (path: string) => string = () => '';

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
    shop = await siteServer((path) => shopPageFor(path));
    harness = await createHarness(echoScript);
    const app = await harness.start({
      agent: { name: 'Shop assistant' },
      // The same shop also as `localhost`: another site than Palaver's 127.0.0.1, so the frame is a third party.
      channels: { web: { embed: { allowedOrigins: [shop.origin, otherSite(shop.origin)] }, userTokens: { secret: TOKEN_SECRET } } },
    });
    palaver = await app.serve({ host: '127.0.0.1', port: 0 });
    // A site the team did not allow, framing the chat page directly.
    stranger = await siteServer(() => `<!doctype html><h1>Not allowed</h1><iframe id="chat" src="${palaver.url}/embed" width="380" height="500"></iframe>`);
    mkdirSync(IMAGES, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await palaver?.close();
    await new Promise((resolve) => shop?.server.close(resolve));
    await new Promise((resolve) => stranger?.server.close(resolve));
    await harness?.close();
  });

  it('shows a launcher that opens the chat, and the scripted model answers a message', async () => {
    shopPageFor = () => shopPage(palaver.url, 'data-accent-color="#c2185b" data-position="bottom-right"');
    const context = await browser.newContext({ viewport: { width: 900, height: 700 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${shop.origin}/`);

    const launcher = page.getByTestId('widget-launcher');
    expect(await launcher.getAttribute('aria-expanded')).toBe('false');
    expect(await launcher.getAttribute('aria-label')).toBe('Open chat');
    // The host page's own `button` rule does not reach the launcher (it lives in a shadow root).
    expect(await launcher.evaluate((node) => node.ownerDocument.defaultView?.getComputedStyle(node).backgroundColor)).toBe('rgb(194, 24, 91)');
    // Nothing of the chat is loaded before the visitor opens it.
    expect(page.frames().some((frame) => frame.url().includes('/embed'))).toBe(false);
    await page.screenshot({ path: `${IMAGES}/widget-closed.png` });

    await launcher.click();
    expect(await launcher.getAttribute('aria-expanded')).toBe('true');
    const frame = await chatFrame(page);
    expect(await frame.locator('h1').textContent()).toBe('Shop assistant');
    // The frame takes the widget's accent.
    expect(await frame.getByTestId('send-button').evaluate((node) => node.ownerDocument.defaultView?.getComputedStyle(node).backgroundColor)).toBe(
      'rgb(194, 24, 91)',
    );
    await say(frame, 'Do you ship to Zurich?');
    await page.screenshot({ path: `${IMAGES}/widget-open.png` });

    // The chat's own close button closes the widget and gives focus back to the launcher.
    await frame.getByTestId('close-embed').click();
    await expect.poll(() => page.getByTestId('widget-panel').isVisible()).toBe(false);
    expect(await launcher.getAttribute('aria-expanded')).toBe('false');
    await expect
      .poll(() =>
        launcher.evaluate(
          (node) =>
            node.getRootNode() instanceof node.ownerDocument.defaultView!.ShadowRoot &&
            (node.getRootNode() as unknown as { activeElement: unknown }).activeElement === node,
        ),
      )
      .toBe(true);

    // Reopened, the same conversation is there; Escape in the chat closes the widget.
    await launcher.click();
    await expect.poll(() => frame.getByTestId('assistant-message').count()).toBe(1);
    await frame.getByTestId('message-input').press('Escape');
    await expect.poll(() => page.getByTestId('widget-panel').isVisible()).toBe(false);
    expect(pageErrors).toEqual([]);
    await context.close();
  });

  it('runs the chat as the site’s signed-in user, whose conversation no one else can read', async () => {
    const token = await userToken(TOKEN_SECRET, { sub: 'shop-user-7', expiresIn: '10m' });
    shopPageFor = () => shopPage(palaver.url, `data-user-token="${token}" data-open="true"`);
    const context = await browser.newContext({ viewport: { width: 900, height: 700 } });
    const page = await context.newPage();
    const frameRequests: string[] = [];
    page.on('request', (request) => frameRequests.push(request.url()));
    await page.goto(`${shop.origin}/`);
    const frame = await chatFrame(page);
    await say(frame, 'Where is my order?');
    const threadId = await frame.evaluate<string | null>("localStorage.getItem('palaver.threadId')");
    expect(threadId).toBeTruthy();

    // The conversation belongs to the token's user: listed for their token, refused to another user's and to the
    // browser's anonymous visitor cookie.
    const mine = await send(palaver.url, { path: '/conversations', headers: { 'x-palaver-user-token': token } });
    expect(mine.status).toBe(200);
    expect((JSON.parse(mine.body) as { conversations: { id: string }[] }).conversations.map((c) => c.id)).toEqual([threadId]);
    const transcript = await send(palaver.url, {
      path: `/conversations/messages?id=${encodeURIComponent(threadId!)}`,
      headers: { 'x-palaver-user-token': token },
    });
    expect((JSON.parse(transcript.body) as { messages: { text: string }[] }).messages.map((m) => m.text)).toEqual([
      'Where is my order?',
      'echo: Where is my order?',
    ]);
    const other = await userToken(TOKEN_SECRET, { sub: 'shop-user-8', expiresIn: '10m' });
    expect(
      (await send(palaver.url, { path: `/conversations/messages?id=${encodeURIComponent(threadId!)}`, headers: { 'x-palaver-user-token': other } })).status,
    ).toBe(403);
    const cookies = (await context.cookies(palaver.url)).map((c) => `${c.name}=${c.value}`).join('; ');
    expect(cookies).toContain('palaver_visitor=');
    expect((await send(palaver.url, { path: `/conversations/messages?id=${encodeURIComponent(threadId!)}`, headers: { cookie: cookies } })).status).toBe(403);

    // The token never appeared in an address the browser requested.
    expect(frameRequests.filter((url) => url.includes(token))).toEqual([]);
    expect(frameRequests.some((url) => url.includes('/embed?auth=token'))).toBe(true);

    // Palaver.setUserToken() switches the chat to another signed-in user: the first user's conversation is gone
    // from view and the next message is the new user's.
    await page.evaluate(`Palaver.setUserToken(${JSON.stringify(other)})`);
    await expect.poll(() => frame.getByTestId('user-message').count(), { timeout: 10_000 }).toBe(0);
    await say(frame, 'I am the other user');
    const theirs = await send(palaver.url, { path: '/conversations', headers: { 'x-palaver-user-token': other } });
    expect((JSON.parse(theirs.body) as { conversations: { id: string }[] }).conversations).toHaveLength(1);
    const stillMine = await send(palaver.url, { path: '/conversations', headers: { 'x-palaver-user-token': token } });
    expect((JSON.parse(stillMine.body) as { conversations: { id: string }[] }).conversations.map((c) => c.id)).toEqual([threadId]);
    await context.close();
  });

  it('works on another site whose frame may keep no storage or cookies, and shows in the panel what went wrong', async () => {
    // Shop on localhost, Palaver on 127.0.0.1: the frame is a third party, and this Chromium denies it
    // localStorage ("Access is denied") and its cookies, as browsers that block third-party storage do.
    shopPageFor = () => shopPage(palaver.url, 'data-open="true"');
    const context = await browser.newContext({ viewport: { width: 900, height: 700 } });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    const policyViolations: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.text().includes('Content Security Policy')) policyViolations.push(message.text());
    });
    await page.goto(`${otherSite(shop.origin)}/`);
    const frame = await chatFrame(page);
    // The frame really is denied its storage here (what made the chat fail before).
    expect(await frame.evaluate("(() => { try { localStorage.length; return 'allowed'; } catch (error) { return error.name; } })()")).toBe('SecurityError');

    await say(frame, 'Hello from the other site');
    await say(frame, 'And a second question');
    // Both in one conversation, kept for the page's lifetime.
    const cookies = (await context.cookies(palaver.url)).map((c) => `${c.name}=${c.value}`).join('; ');
    expect(cookies).not.toContain('palaver_visitor=');
    expect(await frame.getByTestId('user-message').count()).toBe(2);

    // A refusal shows its text in the panel, and the message is given back to send again.
    await context.route(`${palaver.url}/agui`, (route) =>
      route.fulfill({
        status: 429,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'too_many_runs', message: 'Too many messages at once; wait for the answers.' } }),
      }),
    );
    await frame.getByTestId('message-input').fill('third');
    await frame.getByTestId('send-button').click();
    await expect.poll(() => frame.getByTestId('error-line').textContent()).toBe('Too many messages at once; wait for the answers.');
    expect(await frame.getByTestId('message-input').inputValue()).toBe('third');
    await context.unroute(`${palaver.url}/agui`);

    // So does a server that cannot be reached.
    await context.route(`${palaver.url}/agui`, (route) => route.abort('connectionrefused'));
    await frame.getByTestId('send-button').click();
    await expect.poll(() => frame.getByTestId('error-line').textContent()).toMatch(/^Could not reach the server:/);
    await context.unroute(`${palaver.url}/agui`);

    expect(pageErrors).toEqual([]);
    expect(policyViolations).toEqual([]);
    await context.close();
  });

  it('says in the panel when the chat cannot be loaded at all', async () => {
    // A site the server does not allow to frame the chat: the frame is refused and never says it is ready.
    const notListed = await siteServer(() => shopPage(palaver.url, 'data-open="true"'));
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.clock.install();
    await page.goto(`${otherSite(notListed.origin)}/`);
    await expect.poll(() => page.getByTestId('widget-panel').isVisible()).toBe(true);
    expect(await page.getByTestId('widget-error').count()).toBe(0);
    await page.clock.runFor(20_000);
    await expect.poll(() => page.getByTestId('widget-error').textContent()).toBe('The chat could not be loaded. Please try again later.');
    await context.close();
    await new Promise((resolve) => notListed.server.close(resolve));
  });

  it('takes no token from a page it does not allow, and cannot be framed by one', async () => {
    const embed = await send(palaver.url, { path: '/embed' });
    expect(embed.headers['content-security-policy']).toContain(`frame-ancestors ${shop.origin}`);
    expect(embed.headers['content-security-policy']).not.toContain(stranger.origin);
    const full = await send(palaver.url, { path: '/' });
    expect(full.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(full.headers['x-frame-options']).toBe('DENY');

    const context = await browser.newContext();
    const page = await context.newPage();
    const refused: string[] = [];
    page.on('console', (message) => {
      if (message.text().includes('frame-ancestors')) refused.push(message.text());
    });
    await page.goto(`${stranger.origin}/`);
    await expect.poll(() => refused.length, { timeout: 10_000 }).toBeGreaterThan(0);
    // The frame holds the browser's error page, not the chat.
    const frame = page.frames().find((candidate) => candidate !== page.mainFrame())!;
    expect(frame.url()).not.toContain('/embed');
    expect(await frame.locator('[data-testid="message-input"]').count()).toBe(0);

    // The chat opened as a window of its own by that page (not framed): a token posted to it is ignored, so the
    // page cannot make the chat talk as a user of its choosing (here: a valid token it somehow holds).
    const token = await userToken(TOKEN_SECRET, { sub: 'shop-user-9', expiresIn: '10m' });
    const popupPromise = page.waitForEvent('popup');
    await page.evaluate(`window.chat = window.open(${JSON.stringify(`${palaver.url}/embed?auth=token`)}, 'chat'); undefined`);
    const popup = await popupPromise;
    const tokenHeaders: string[] = [];
    popup.on('request', (request) => {
      const header = request.headers()['x-palaver-user-token'];
      if (header !== undefined) tokenHeaders.push(header);
    });
    await popup.waitForSelector('[data-testid="message-input"]');
    // Resolves once the page's own message listener (registered first) has seen the message.
    await popup.evaluate("window.arrived = new Promise((resolve) => addEventListener('message', () => setTimeout(resolve, 0), { once: true })); undefined");
    await page.evaluate(`window.chat.postMessage({ type: 'palaver:token', token: ${JSON.stringify(token)} }, '*')`);
    await popup.evaluate('window.arrived');
    // Still waiting for a token from an allowed parent: it cannot send, and asked nothing with the posted token.
    await popup.getByTestId('message-input').fill('hello');
    expect(await popup.getByTestId('send-button').isDisabled()).toBe(true);
    expect(tokenHeaders).toEqual([]);
    const listed = await send(palaver.url, { path: '/conversations', headers: { 'x-palaver-user-token': token } });
    expect((JSON.parse(listed.body) as { conversations: unknown[] }).conversations).toEqual([]);
    await context.close();
  });
});
