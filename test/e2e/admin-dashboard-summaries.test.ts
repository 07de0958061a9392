import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

const CHROMIUM = '/usr/bin/chromium';
/** Screenshots, kept after the run (gitignored). */
const ARTIFACTS = resolve('test-artifacts', 'admin-dashboard-summaries');

const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const;

describe('conversation summaries in the operator dashboard (Chromium)', () => {
  let browser: Browser;
  let harness: Harness;
  let palaver: Palaver;
  let server: RunningHttpServer;
  let sessionId = '';

  beforeAll(async () => {
    // A missing browser must fail loudly: a skipped e2e suite looks like a passing one.
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`apt-get install chromium\` to run the browser tests.`);
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
    harness = await createHarness((call) =>
      call.instructions.includes('You keep the memory of a long conversation')
        ? { text: 'The person is Ann Smith; her door code is 4711.', usage: { input: 900, output: 40 } }
        : { text: 'Noted.', usage: { input: 100, output: 10 } },
    );
    palaver = await harness.start({
      server: { adminToken: TEST_SECRETS.adminToken },
      model: { prices: { scripted: { input: '2.50', output: '10' } } },
      agent: { historyLimit: 50, memory: { summarize: { afterTokens: 40, keepRecentMessages: 2 } } },
    });
    for (const text of ['Please remember: my door code is 4711 and my name is Ann Smith.', 'What time do you open?', 'And on Sundays?'])
      ({ sessionId } = await palaver.chat({ userId: 'ann', text }));
    // Written after the last reply, in the background.
    for (let waited = 0; (await palaver.store.summaries.latest(sessionId)) === undefined; waited += 50) {
      if (waited > 10_000) throw new Error('no summary was written');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await harness?.close();
  });

  for (const viewport of VIEWPORTS) {
    it(`shows the summary the agent reads, its range and cost, above the whole transcript (${viewport.name})`, async () => {
      const context = await browser.newContext({ viewport: { width: viewport.width, height: viewport.height } });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(message.text());
      });
      await page.goto(`${server.url}/admin#/conversations/${sessionId}`);
      await page.getByTestId('sign-in-token').fill(TEST_SECRETS.adminToken);
      await page.getByTestId('sign-in-submit').click();

      const panel = page.getByTestId('summaries');
      await expect
        .poll(() => panel.locator('summary').textContent(), { timeout: 10_000 })
        .toBe('Summaries of the earlier conversation: 1 version · the agent reads v1 (messages 1–4)');
      await panel.locator('summary').click();
      const version = page.getByTestId('summary');
      expect(await version.getAttribute('data-current')).toBe('true');
      expect(await version.getByTestId('summary-text').textContent()).toBe('The person is Ann Smith; her door code is 4711.');
      // 900 tokens in at 2.50 and 40 out at 10 per million: the exact amount in the tooltip.
      expect(await version.locator('.money').getAttribute('title')).toBe('0.00265 USD');
      expect(await version.textContent()).toContain('900 in / 40 out');
      // Nothing is deleted: every message is still in the transcript below.
      expect(await page.getByTestId('transcript-message').count()).toBe(6);
      await page.screenshot({ path: join(ARTIFACTS, `${viewport.name}.png`), fullPage: true });
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
      expect(errors).toEqual([]);
      await context.close();
    });
  }
});
