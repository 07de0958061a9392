import { existsSync, mkdirSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { cancellingModel } from '../support/approval-tools.js';

const CHROMIUM = '/usr/bin/chromium';
const IMAGES = 'test-artifacts';

// The whole path in a browser on a phone-sized screen: page → AG-UI → turn → the tool waits for the person's yes →
// the page's buttons → a decision run → the turn goes on from its journal → the tool runs once → page.
describe('web chat page: approving a tool call through a real Palaver', { timeout: 90_000 }, () => {
  let browser: Browser;
  let harness: Harness;
  const runs: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`node scripts/prepare-test-env.mjs\` to install it.`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    harness = await createHarness(cancellingModel);
    mkdirSync(IMAGES, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  it('asks with buttons, shows them again after a reload, runs the tool once on Approve, and a later reload shows the question without buttons', async () => {
    const cancel = defineTool({
      name: 'cancel_appointment',
      description: 'Cancels an appointment',
      input: z.object({ appointment_id: z.string() }),
      approval: 'person',
      describe: ({ appointment_id }) => `Cancel appointment ${appointment_id}`,
      run: ({ appointment_id }) => {
        runs.push(appointment_id);
        return `Appointment ${appointment_id} cancelled.`;
      },
    });
    const palaver = await harness.start({}, { tools: [cancel] });
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1, locale: 'en-US' });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      await page.goto(`${server.url}/`);
      await page.getByTestId('message-input').fill('Please cancel my appointment');
      await page.getByTestId('send-button').click();

      const card = page.getByTestId('approval');
      const approve = page.getByTestId('approve-button');
      const decline = page.getByTestId('decline-button');
      await expect.poll(() => card.count(), { timeout: 15_000 }).toBe(1);
      expect(await page.getByTestId('assistant-message').last().textContent()).toContain('Cancel appointment a-17');
      await expect.poll(() => approve.isEnabled()).toBe(true);
      expect(await decline.isEnabled()).toBe(true);
      expect(runs).toEqual([]);
      expect(harness.model.calls).toHaveLength(1);
      // Both buttons fit the phone's width and nothing scrolls sideways.
      const [a, d] = [await approve.boundingBox(), await decline.boundingBox()];
      expect(a!.x).toBeGreaterThanOrEqual(0);
      expect(d!.x + d!.width).toBeLessThanOrEqual(390);
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);

      // A reload before deciding: the stored question comes back with its buttons.
      await page.reload();
      await expect.poll(() => page.getByTestId('assistant-message').count(), { timeout: 10_000 }).toBe(1);
      expect(await page.getByTestId('assistant-message').textContent()).toContain('Cancel appointment a-17');
      await expect.poll(() => card.count()).toBe(1);
      await expect.poll(() => approve.isEnabled()).toBe(true);
      await page.screenshot({ path: `${IMAGES}/chat-390-approval-reloaded.png` });

      await approve.click();
      await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 15_000 }).toBe('Done: Appointment a-17 cancelled.');
      await expect.poll(() => page.getByTestId('approval-status').textContent()).toBe('✅ Approved');
      expect(await approve.isDisabled()).toBe(true);
      expect(await decline.isDisabled()).toBe(true);
      expect(runs).toEqual(['a-17']);
      expect(harness.model.calls).toHaveLength(2);
      await page.screenshot({ path: `${IMAGES}/chat-390-approval-approved.png` });

      // After the decision a reload shows the question and the answer, and nothing left to press.
      await page.reload();
      await expect
        .poll(() => page.getByTestId('assistant-message').allTextContents(), { timeout: 10_000 })
        .toEqual([expect.stringContaining('Cancel appointment a-17'), 'Done: Appointment a-17 cancelled.']);
      expect(await card.count()).toBe(0);
      expect(await page.locator('button:enabled', { hasText: /^(Approve|Decline)$/ }).count()).toBe(0);
      expect(runs).toEqual(['a-17']);
      expect(pageErrors).toEqual([]);
    } finally {
      await context.close();
      await server.close();
    }
  });
});
