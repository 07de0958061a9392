import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoTools } from '../../src/demo/demo-tools.js';
import { demoScript } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

const CHROMIUM = '/usr/bin/chromium';

// The whole path in a real browser: page → AG-UI → runtime → scripted model over HTTP → tool → SQLite → page.
describe('demo agent in the browser', () => {
  let browser: Browser;
  let harness: Harness;

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
    harness = await createHarness(demoScript);
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  it('runs a tool from the web chat and keeps the conversation across a server restart', async () => {
    const tools = createDemoTools({ timeZone: 'UTC' });
    const context = await browser.newContext();
    const page = await context.newPage();

    const first = await harness.start({}, { tools });
    const server = await first.serve({ host: '127.0.0.1', port: 0 });
    await page.goto(`${server.url}/`);
    await page.getByTestId('message-input').fill('remember: buy milk');
    await page.getByTestId('send-button').click();
    await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toContain('buy milk');
    expect(await page.getByTestId('tool-line').first().textContent()).toBe('Saving your note… ✓');
    await server.close();
    await first.close();

    const second = await harness.start({}, { tools });
    // Same port, so the page keeps its origin and with it its thread id.
    const restarted = await second.serve({ host: '127.0.0.1', port: Number(new URL(server.url).port) });
    await page.goto(`${restarted.url}/`);
    // The page shows the first exchange again (rebuilt from the server): wait for the second answer, not the first.
    await expect.poll(() => page.getByTestId('assistant-message').count(), { timeout: 10_000 }).toBe(1);
    await page.getByTestId('message-input').fill('list my notes');
    await page.getByTestId('send-button').click();
    await expect.poll(() => page.getByTestId('assistant-message').count(), { timeout: 10_000 }).toBe(2);
    await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toContain('buy milk');
    // The page takes new input once the run has finished, i.e. after the turn was stored.
    await expect.poll(() => page.getByTestId('send-button').isEnabled(), { timeout: 10_000 }).toBe(true);
    // The page sent the same thread after the restart, so the server continued the same stored conversation.
    // The browser kept its signed visitor cookie across the restart (the secret is kept beside the database), so it
    // is the same visitor.
    const cookie = (await context.cookies()).find((c) => c.name === 'palaver_visitor');
    const visitor = `visitor:${cookie!.value.split('.')[1]}`;
    const user = await second.store.users.findByAccount('web', visitor);
    const sessions = await second.store.sessions.listByUser(user!.id);
    expect(sessions.map((session) => session.conversationId)).toEqual([await page.evaluate<string>("localStorage.getItem('palaver.threadId')")]);
    expect(sessions).toHaveLength(1);
    const messages = await second.store.messages.listRecent(sessions[0]!.id, { limit: 10, audience: 'display' });
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    await restarted.close();
    await context.close();
  });
});
