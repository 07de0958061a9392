import { existsSync, mkdirSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebChannel } from '../../src/channels/web/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer, type RunningHttpServer } from '../../src/server/index.js';
import { ScriptedPipeline } from '../server/scripted-pipeline.js';

const CHROMIUM = '/usr/bin/chromium';
const IMAGES = 'test-artifacts';
const QUESTION = 'Before I go on, I need your yes:\nCancel the appointment on 3 March at 10:00 (Anna, haircut)';

// The chat page against the web channel with a scripted pipeline: the agent's reply asks to approve a tool call, on a
// phone-sized screen (390 × 844).
describe('web chat page: approving a tool call on a small screen', { timeout: 60_000 }, () => {
  let browser: Browser;
  let server: RunningHttpServer;
  let pipeline: ScriptedPipeline;

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
    const channel = new WebChannel({ maxInboundChars: 1000, logger: silentLogger(), cookieSecret: 'c'.repeat(40), agentName: 'Ada' });
    pipeline = new ScriptedPipeline(channel, {
      noTool: true,
      chunkChars: 12,
      reply: QUESTION,
      approval: { id: 'apv-42', expiresAt: '2030-03-01T11:00:00.000Z' },
    });
    await channel.start(pipeline);
    const app = createHttpApp({ health: async () => ({ database: { ok: true } }), logger: silentLogger(), routes: channel.routes });
    server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
    mkdirSync(IMAGES, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows Approve and Decline under the question; a press sends the decision, disables both and shows the outcome', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1, locale: 'en-US' });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    const runs: unknown[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/agui')) runs.push(request.postDataJSON());
    });
    await page.goto(`${server.url}/`);

    await page.getByTestId('message-input').fill('Please cancel my haircut on Monday');
    await page.getByTestId('send-button').click();
    const card = page.getByTestId('approval');
    await expect.poll(() => card.count(), { timeout: 10_000 }).toBe(1);
    const approve = page.getByTestId('approve-button');
    const decline = page.getByTestId('decline-button');
    expect(await approve.textContent()).toBe('Approve');
    expect(await decline.textContent()).toBe('Decline');
    await expect.poll(() => approve.isEnabled()).toBe(true);
    expect(await page.getByTestId('assistant-message').last().textContent()).toContain('Cancel the appointment on 3 March');

    // Both buttons fit the phone's width, side by side, big enough to tap, and nothing scrolls sideways.
    const [a, d] = [await approve.boundingBox(), await decline.boundingBox()];
    expect(a && d).toBeTruthy();
    expect(a!.x).toBeGreaterThanOrEqual(0);
    expect(d!.x + d!.width).toBeLessThanOrEqual(390);
    expect(Math.abs(a!.y - d!.y)).toBeLessThan(2);
    expect(a!.height).toBeGreaterThanOrEqual(36);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await page.screenshot({ path: `${IMAGES}/chat-390-approval.png` });

    await approve.click();
    // Disabled at once, and a run carrying only the decision went out.
    expect(await approve.isDisabled()).toBe(true);
    expect(await decline.isDisabled()).toBe(true);
    await expect.poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe('Done: the appointment is cancelled.');
    await expect.poll(() => page.getByTestId('approval-status').textContent()).toBe('✅ Approved');
    expect(await page.getByTestId('approval-status').isVisible()).toBe(true);
    expect(await approve.isDisabled()).toBe(true);
    expect(await decline.isDisabled()).toBe(true);
    // The composer works again; the card's buttons do not come back.
    await expect.poll(() => page.getByTestId('send-button').isEnabled()).toBe(true);
    expect(await approve.isDisabled()).toBe(true);

    expect(runs).toHaveLength(2);
    expect(runs[1]).toMatchObject({ messages: [], forwardedProps: { approval: { id: 'apv-42', decision: 'approve' } } });
    const decisionRun = runs[1] as { runId: string };
    expect(pipeline.decisions).toEqual([
      { accountId: expect.stringMatching(/^visitor:/), approvalId: 'apv-42', decision: 'approved', messageId: decisionRun.runId },
    ]);
    // The page sent its message as the same visitor that decided.
    expect(pipeline.received[0]?.accountId).toBe(pipeline.decisions[0]?.accountId);
    await page.screenshot({ path: `${IMAGES}/chat-390-approved.png` });
    expect(pageErrors).toEqual([]);
    await context.close();
  });
});
