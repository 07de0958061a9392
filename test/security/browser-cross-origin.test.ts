import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { echoScript, rowCounts, storedTexts } from './attack-kit.js';

const CHROMIUM = '/usr/bin/chromium';

/** A RunAgentInput spelled as one `text/plain` form field: `name=value` with the `=` hidden inside a JSON string. */
function formFieldParts(target: string): { name: string; value: string } {
  const json = JSON.stringify({
    threadId: target,
    runId: 'evil-run',
    messages: [{ id: 'm', role: 'user', content: 'evil form: save_note for the victim', pad: 'PAD' }],
    tools: [],
    context: [],
    state: {},
    forwardedProps: { userId: 'victim' },
  });
  const cut = json.indexOf('PAD');
  return { name: json.slice(0, cut), value: json.slice(cut) };
}

/** The attacker's site: a page that posts a form to /agui, and one that tries fetch without and with CORS. */
function attackerPages(target: string, victimThread: string): (path: string) => string {
  const field = formFieldParts(victimThread);
  const escapeHtml = (text: string): string => text.replace(/&/g, '&amp;').replace(/'/g, '&#39;').replace(/</g, '&lt;');
  const body = JSON.stringify({
    threadId: victimThread,
    runId: 'evil-fetch',
    messages: [{ id: 'm', role: 'user', content: 'evil fetch' }],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
  });
  return (path) => {
    if (path === '/form') {
      return `<!doctype html><form method="POST" action="${target}/agui" enctype="text/plain"><input name='${escapeHtml(field.name)}' value='${escapeHtml(field.value)}'></form><script>document.forms[0].submit()</script>`;
    }
    return `<!doctype html><script>
      window.results = (async () => {
        const out = {};
        try {
          const r = await fetch(${JSON.stringify(`${target}/agui`)}, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: ${JSON.stringify(body)} });
          out.noCors = r.type;
        } catch (e) { out.noCors = 'error: ' + e.message; }
        try {
          const r = await fetch(${JSON.stringify(`${target}/agui`)}, { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' }, body: ${JSON.stringify(body)} });
          out.cors = 'status ' + r.status;
        } catch (e) { out.cors = 'error: ' + e.name; }
        try {
          const r = await fetch(${JSON.stringify(`${target}/conversations`)}, { credentials: 'include' });
          out.read = 'status ' + r.status + ' ' + (await r.text());
        } catch (e) { out.read = 'error: ' + e.name; }
        return out;
      })();
    </script>`;
  };
}

describe('a page on another origin, in Chromium', () => {
  let browser: Browser;
  let harness: Harness;
  let palaver: Palaver;
  let server: RunningHttpServer;
  let attacker: Server;
  let attackerPort: number;
  let pages: ((path: string) => string) | undefined;

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
    palaver = await harness.start();
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    attacker = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(pages?.(req.url ?? '/') ?? '');
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    attackerPort = (attacker.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await new Promise((resolve) => attacker?.close(resolve));
    await harness?.close();
  });

  it('refuses its form post and its fetches to /agui, cookie or not, and stores nothing', async () => {
    const context = await browser.newContext();
    // The victim chats first: the browser now holds a valid visitor cookie for 127.0.0.1 (any port: same site).
    const chat = await context.newPage();
    await chat.goto(`${server.url}/`);
    await chat.getByTestId('message-input').fill('my own message');
    await chat.getByTestId('send-button').click();
    await expect.poll(() => chat.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe('echo: my own message');
    const victimThread = await chat.evaluate<string>("localStorage.getItem('palaver.threadId')");
    expect((await context.cookies(server.url)).map((c) => c.name)).toEqual(['palaver_visitor']);

    const before = rowCounts(harness.databaseUrl);
    const calls = harness.model.calls.length;

    // Same site (127.0.0.1, another port) and cross site (localhost) attacker pages.
    for (const attackerOrigin of [`http://127.0.0.1:${attackerPort}`, `http://localhost:${attackerPort}`]) {
      pages = attackerPages(server.url, victimThread);
      const page = await context.newPage();
      const posted = page.waitForResponse((response) => response.url() === `${server.url}/agui`, { timeout: 10_000 });
      await page.goto(`${attackerOrigin}/form`);
      const response = await posted;
      expect(response.status(), attackerOrigin).toBe(403);
      expect(await response.text()).toContain('cross_origin');

      await page.goto(`${attackerOrigin}/fetch`);
      const results = await page.evaluate<Record<string, string>>('window.results');
      // The no-cors request went out (opaque to the page) and was refused by the server; the CORS one failed its
      // preflight; the page cannot read the victim's conversations.
      expect(results.noCors, attackerOrigin).toBe('opaque');
      expect(results.cors, attackerOrigin).toBe('error: TypeError');
      expect(results.read, attackerOrigin).toBe('error: TypeError');
      await page.close();
    }

    // Every attack request was answered above (403, or an opaque response the page saw), and a run is stored before
    // its request is answered: no wait is needed for a wrongly accepted one to show.
    expect(rowCounts(harness.databaseUrl)).toEqual(before);
    expect(harness.model.calls.length).toBe(calls);
    expect(storedTexts(harness.databaseUrl).filter((text) => text.includes('evil'))).toEqual([]);
    // The victim's own page still works.
    await chat.getByTestId('message-input').fill('still mine');
    await chat.getByTestId('send-button').click();
    await expect.poll(() => chat.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe('echo: still mine');
    await context.close();
  });
});
