import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { requestApproval } from '../support/approval-request.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

const CHROMIUM = '/usr/bin/chromium';
/** Screenshots of every step, kept after the run (gitignored). */
const ARTIFACTS = resolve('test-artifacts', 'admin-dashboard-approvals');

// Operators see the tool calls waiting for their decision while the page is open (a count in the top bar, a list
// with Approve / Decline), and a person's requests only as information. Requests arrive after the page loaded.

describe('the dashboard in Chromium: approvals', () => {
  let browser: Browser;
  let harness: Harness;
  let palaver: Palaver;
  let server: RunningHttpServer;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`apt-get install chromium\` to run the browser tests.`);
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    harness = await createHarness(() => ({ text: 'Done.' }));
    palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken } });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await harness?.close();
    console.log(`dashboard approval screenshots: ${ARTIFACTS}`);
  });

  it('counts the requests an operator decides, approves one, declines one with a reason, and fits a phone', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const shot = async (step: string) => void (await page.screenshot({ path: join(ARTIFACTS, `${step}.png`), fullPage: true }));
    await page.goto(`${server.url}/admin#/approvals`);
    await page.getByTestId('sign-in-token').fill(TEST_SECRETS.adminToken);
    await page.getByTestId('sign-in-submit').click();
    await expect.poll(() => page.getByTestId('no-approvals').isVisible(), { timeout: 10_000 }).toBe(true);
    const count = page.getByTestId('approval-count');
    expect(await count.isHidden()).toBe(true);

    const refund = await requestApproval(palaver, { name: 'Olena', by: 'operator', tool: 'refund', summary: 'Refund 40 EUR to Olena' });
    const voucher = await requestApproval(palaver, { name: 'Ivo', by: 'operator', tool: 'voucher', summary: 'Send a 10 EUR voucher to Ivo' });
    await requestApproval(palaver, { name: 'Mira', by: 'person', tool: 'cancel_booking', summary: 'Cancel the booking of Friday 10:00' });
    const rows = page.getByTestId('approval-row');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(3);
    await expect.poll(() => count.textContent()).toBe('2');
    // The person's own request is shown, without buttons: only they decide it.
    const person = rows.filter({ hasText: 'cancel_booking' });
    expect(await person.getByTestId('approval-by').textContent()).toBe('the person decides, in their chat');
    expect(await person.getByTestId('approve-button').count()).toBe(0);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await shot('waiting');

    await rows.filter({ hasText: 'refund' }).getByTestId('approve-button').click();
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(2);
    expect(await palaver.store.approvals.get(refund.id)).toMatchObject({ status: 'approved', decidedBy: 'admin' });
    await expect.poll(() => count.textContent()).toBe('1');

    await rows.filter({ hasText: 'voucher' }).getByTestId('decline-button').click();
    await page.getByTestId('decline-reason').fill('not this month');
    await shot('declining');
    await page.getByTestId('decline-confirm').click();
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(1);
    expect(await palaver.store.approvals.get(voucher.id)).toMatchObject({ status: 'declined', reason: 'not this month' });
    await expect.poll(() => count.isHidden()).toBe(true);
    await shot('decided');
    expect(errors).toEqual([]);
    await context.close();
  });
});
