import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { adminActions, issuedOperatorToken } from '../../src/admin/api-contract.js';
import type { Palaver } from '../../src/app.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { startFakeTelegram, type FakeTelegram, type ModelScript } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

const CHROMIUM = '/usr/bin/chromium';
/** Screenshots of every step, kept after the run (gitignored). */
const ARTIFACTS = resolve('test-artifacts', 'admin-dashboard');

const lookup = defineTool({
  name: 'order_status',
  description: 'Looks up an order',
  input: z.object({ id: z.number() }),
  run: ({ id }) => ({ id, status: 'packed' }),
});

/** "order?" → a tool call, then an answer from its result; anything else is answered at once. */
const script: ModelScript = (call) => {
  const last = call.messages[call.messages.length - 1];
  if (last?.type === 'tool_result') return { text: 'Your order 7 is packed.', usage: { input: 900, output: 40 } };
  if (lastUserText(call)?.includes('order')) return { toolCalls: [{ name: 'order_status', arguments: { id: 7 } }], usage: { input: 800, output: 20 } };
  return { text: `You said: ${lastUserText(call) ?? ''}`, usage: { input: 500, output: 10 } };
};

const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 800, chatId: 5101, person: 'Dana' },
  { name: 'phone', width: 390, height: 844, chatId: 5102, person: 'Ivo' },
] as const;

describe('operator dashboard in Chromium', () => {
  let browser: Browser;
  let harness: Harness;
  let telegram: FakeTelegram;
  let palaver: Palaver;
  let server: RunningHttpServer;

  beforeAll(async () => {
    // A missing browser must fail loudly: a skipped e2e suite looks like a passing one.
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`apt-get install chromium\` to run the browser tests.`);
    mkdirSync(ARTIFACTS, { recursive: true });
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
    telegram = await startFakeTelegram();
    harness = await createHarness(script);
    palaver = await harness.start(
      {
        server: { adminToken: TEST_SECRETS.adminToken },
        model: { prices: { scripted: { input: '2.50', output: '10' } } },
        channels: { telegram: { token: telegram.token, apiRoot: telegram.apiRoot, quietWindowMs: 0, drafts: false } },
      },
      { tools: [lookup] },
    );
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await harness?.close();
    await telegram?.close();
    console.log(`admin dashboard screenshots: ${ARTIFACTS}`);
  });

  async function open(viewport: (typeof VIEWPORTS)[number]): Promise<{ page: Page; errors: string[]; shot: (step: string) => Promise<void> }> {
    const context = await browser.newContext({ viewport: { width: viewport.width, height: viewport.height } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await page.goto(`${server.url}/admin`);
    return { page, errors, shot: async (step) => void (await page.screenshot({ path: join(ARTIFACTS, `${viewport.name}-${step}.png`), fullPage: true })) };
  }

  async function signIn(page: Page, token: string = TEST_SECRETS.adminToken): Promise<void> {
    await page.getByTestId('sign-in-token').fill(token);
    await page.getByTestId('sign-in-submit').click();
    await expect.poll(() => page.getByTestId('conversation-search').isVisible()).toBe(true);
  }

  for (const viewport of VIEWPORTS) {
    it(`refuses a wrong admin token and lets the right one in, keeping no token in the page (${viewport.name})`, async () => {
      const { page, errors, shot } = await open(viewport);
      await page.getByTestId('sign-in-token').fill('not-the-admin-token');
      await page.getByTestId('sign-in-submit').click();
      await expect.poll(() => page.getByTestId('sign-in-error').textContent()).toBe('That is neither an operator token nor the admin token.');
      expect(await page.locator('#app').isHidden()).toBe(true);
      await shot('sign-in-refused');

      await signIn(page);
      await expect.poll(() => page.getByTestId('signed-in-as').textContent()).toBe('admin · admin');
      const cookies = await page.context().cookies();
      expect(cookies).toEqual([expect.objectContaining({ name: 'palaver_admin', httpOnly: true, sameSite: 'Strict', path: '/admin' })]);
      expect(await page.evaluate<string>('document.cookie')).toBe('');
      expect(await page.evaluate<string>('JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])')).not.toContain(
        TEST_SECRETS.adminToken,
      );
      // A reload keeps the session; signing out ends it.
      await page.reload();
      await expect.poll(() => page.getByTestId('conversation-search').isVisible()).toBe(true);
      await expect.poll(() => page.getByTestId('live-state').textContent()).toBe('● live');
      await shot('signed-in');
      await page.getByTestId('sign-out').click();
      await expect.poll(() => page.getByTestId('sign-in-token').isVisible()).toBe(true);
      await page.reload();
      await expect.poll(() => page.getByTestId('sign-in-token').isVisible()).toBe(true);
      // The one error: the refused sign-in's 401.
      expect(errors).toEqual([expect.stringContaining('401')]);
      await page.context().close();
    });

    it(`shows a Telegram message live, its audit, a reply sent as the agent, and a pause and resume (${viewport.name})`, async () => {
      const { page, errors, shot } = await open(viewport);
      await signIn(page);
      const row = page.getByTestId('conversation-row').filter({ hasText: viewport.person });
      expect(await row.count()).toBe(0);

      // A person writes on Telegram: the row appears without a reload, with the agent's answer as its last message.
      const from = { id: viewport.chatId, is_bot: false, first_name: viewport.person };
      telegram.sendText({ chatId: viewport.chatId, text: 'Where is my order?', from });
      await telegram.waitForMessages(1, { chatId: viewport.chatId });
      await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(1);
      await expect.poll(() => row.getByTestId('conversation-last').textContent(), { timeout: 10_000 }).toContain('Your order 7 is packed.');
      await shot('list-live');

      // The transcript, then the audit: the tool call with its arguments and result.
      await row.click();
      const messages = page.getByTestId('transcript-message');
      await expect
        .poll(() => messages.allTextContents())
        .toEqual([expect.stringContaining('Where is my order?'), expect.stringContaining('Your order 7 is packed.')]);
      await page.getByTestId('audit-toggle').check();
      const toolCall = page.getByTestId('tool-call').first();
      await expect.poll(() => toolCall.count()).toBe(1);
      await toolCall.locator('summary').click();
      expect(await toolCall.textContent()).toMatch(/order_status[\s\S]*succeeded[\s\S]*"id": 7[\s\S]*packed/);
      await shot('audit');
      await page.getByTestId('audit-toggle').uncheck();

      // Send as the agent: it reaches the person's Telegram chat, once, and shows as the operator's.
      await page.getByTestId('agent-text').fill('An operator here: it ships today.');
      await page.getByTestId('agent-send').click();
      const sent = await telegram.waitForMessages(2, { chatId: viewport.chatId });
      expect(sent.map((message) => message.text)).toEqual(['Your order 7 is packed.', 'An operator here: it ships today.']);
      await expect
        .poll(() => page.locator('[data-testid=transcript-message][data-author=operator]').allTextContents())
        .toEqual([expect.stringContaining('An operator here: it ships today.')]);
      await shot('sent-as-agent');

      // Pause: the next message is stored and shown waiting, not answered.
      await page.getByTestId('pause-button').click();
      await expect.poll(() => page.getByTestId('detail-paused').isVisible()).toBe(true);
      telegram.sendText({ chatId: viewport.chatId, text: 'Hello? Anyone?', from });
      await expect.poll(() => page.getByTestId('detail-waiting').textContent(), { timeout: 10_000 }).toBe('1 waiting');
      expect(telegram.sentTo(viewport.chatId)).toHaveLength(2);
      await shot('paused');

      // Resume: the waiting message is answered, once.
      await page.getByTestId('resume-button').click();
      const answered = await telegram.waitForMessages(3, { chatId: viewport.chatId });
      expect(answered[2]?.text).toBe('You said: Hello? Anyone?');
      await expect.poll(() => page.getByTestId('detail-waiting').count(), { timeout: 10_000 }).toBe(0);
      await expect.poll(() => page.getByTestId('pause-button').isVisible()).toBe(true);
      await expect.poll(() => messages.count()).toBe(5);
      expect(telegram.sentTo(viewport.chatId)).toHaveLength(3);
      await shot('resumed');

      // Every view of the dashboard renders at this width: the person, costs, health.
      await page.getByTestId('user-link').click();
      await expect.poll(() => page.getByTestId('user-name').textContent()).toBe(viewport.person);
      expect(await page.getByTestId('user-accounts').textContent()).toContain(String(viewport.chatId));
      await shot('user');
      await page.getByTestId('nav-costs').click();
      await expect.poll(() => page.getByTestId('cost-totals').textContent()).toMatch(/Total: [\d.,]+ USD/);
      await shot('costs');
      await page.getByTestId('nav-health').click();
      await expect.poll(() => page.getByTestId('inbox-waiting').isVisible()).toBe(true);
      await expect.poll(() => page.getByTestId('latency-table').textContent()).toContain('turn_seconds');
      await shot('health');
      // Nothing of the page is wider than the screen.
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
      expect(errors).toEqual([]);
      await page.context().close();
    });
  }

  it("signs an operator in with their own token, shows their name, keeps the admins' views from them, and audits their pause as theirs", async () => {
    const admin = { authorization: `Bearer ${TEST_SECRETS.adminToken}`, 'content-type': 'application/json' };
    const added = await fetch(`${server.url}/admin/operators`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'Olena' }) });
    const { operator, token } = issuedOperatorToken.parse(await added.json());
    const from = { id: 5103, is_bot: false, first_name: 'Mara' };
    telegram.sendText({ chatId: 5103, text: 'Hello', from });
    await telegram.waitForMessages(1, { chatId: 5103 });

    const { page, errors, shot } = await open(VIEWPORTS[0]);
    expect(await page.locator('label[for=sign-in-token]').textContent()).toBe('Your operator token, or the admin token');
    await signIn(page, token);
    await expect.poll(() => page.getByTestId('signed-in-as').textContent()).toBe('Olena');
    expect(await page.getByTestId('nav-costs').isHidden()).toBe(true);
    expect(await page.getByTestId('nav-health').isHidden()).toBe(true);
    await page.getByTestId('conversation-row').filter({ hasText: 'Mara' }).click();
    await page.getByTestId('pause-button').click();
    await expect.poll(() => page.getByTestId('detail-paused').isVisible()).toBe(true);
    await shot('operator-paused');

    const audit = adminActions.parse(await (await fetch(`${server.url}/admin/actions`, { headers: admin })).json()).actions;
    expect(audit.find((action) => action.action === 'pause')).toMatchObject({ actor: 'Olena', operatorId: operator.id });
    expect(errors).toEqual([]);
    await page.context().close();
  });
});
