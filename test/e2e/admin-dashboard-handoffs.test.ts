import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import type { Store } from '../../src/domain/ports/store.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { openStore } from '../../src/store/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

const CHROMIUM = '/usr/bin/chromium';
/** Screenshots of every step, kept after the run (gitignored). */
const ARTIFACTS = resolve('test-artifacts', 'admin-dashboard-handoffs');

// The dashboard tells operators who waits for a person while the page is open: a count in the top bar, a chime when
// one arrives, a list with a Take button. Handoffs are opened and taken through another store on the same database,
// as another process would.

/** Counts the chime's tones: the page's WebAudio oscillators, wrapped before its scripts run. */
const COUNT_TONES = `
  window.__tones = 0;
  const create = AudioContext.prototype.createOscillator;
  AudioContext.prototype.createOscillator = function () { window.__tones += 1; return create.call(this); };
`;
/** One chime is two tones. */
const CHIME = 2;

describe('the dashboard in Chromium: waiting for a person', () => {
  let browser: Browser;
  let harness: Harness;
  let palaver: Palaver;
  let server: RunningHttpServer;
  let other: Store;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`apt-get install chromium\` to run the browser tests.`);
    mkdirSync(ARTIFACTS, { recursive: true });
    // Sound without a click first: signing in is a click, but the page must chime after a reload too.
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--autoplay-policy=no-user-gesture-required'] });
    harness = await createHarness(() => ({ text: 'A colleague will help you.' }));
    palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken } });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    other = await openStore(harness.databaseUrl);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await other?.close();
    await harness?.close();
    console.log(`dashboard handoff screenshots: ${ARTIFACTS}`);
  });

  async function conversation(name: string): Promise<{ sessionId: string; userId: string }> {
    await palaver.store.users.resolveAccount({ channel: 'api', accountId: name.toLowerCase(), displayName: name });
    const reply = await palaver.chat({ userId: name.toLowerCase(), text: 'I need a person' });
    return { sessionId: reply.sessionId, userId: (await palaver.store.sessions.findById(reply.sessionId))!.userId };
  }

  const tones = (page: Page) => page.evaluate<number>('window.__tones');

  it('counts who waits, chimes when one arrives, lists them with Take, and clears them once taken', async () => {
    const olena = await conversation('Olena');
    const ivo = await conversation('Ivo');
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addInitScript(COUNT_TONES);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    const shot = async (step: string) => void (await page.screenshot({ path: join(ARTIFACTS, `${step}.png`), fullPage: true }));
    await page.goto(`${server.url}/admin`);
    await page.getByTestId('sign-in-token').fill(TEST_SECRETS.adminToken);
    await page.getByTestId('sign-in-submit').click();
    await expect.poll(() => page.getByTestId('live-state').textContent()).toBe('● live');
    const count = page.getByTestId('handoff-count');
    expect(await count.isHidden()).toBe(true);

    // Olena is handed over by another process: the count shows at once, with a chime.
    await other.handoffs.open({ sessionId: olena.sessionId, userId: olena.userId, reason: 'wants a refund over the limit', source: 'model', at: Date.now() });
    await expect.poll(() => count.textContent(), { timeout: 10_000 }).toBe('1');
    expect(await count.isVisible()).toBe(true);
    await expect.poll(() => tones(page)).toBe(CHIME);
    await shot('count');

    // The list: who, why, who asked, and Take.
    await page.getByTestId('nav-handoffs').click();
    const rows = page.getByTestId('handoff-row');
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().getByTestId('handoff-person').textContent()).toBe('Olena');
    expect(await rows.first().getByTestId('handoff-reason').textContent()).toBe('wants a refund over the limit');
    expect(await rows.first().getByTestId('handoff-waiting').isVisible()).toBe(true);
    await shot('list');

    // Ivo arrives while the list is open: it grows, and the page chimes again.
    await other.handoffs.open({ sessionId: ivo.sessionId, userId: ivo.userId, reason: 'said "operator"', source: 'phrase', at: Date.now() });
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(2);
    await expect.poll(() => count.textContent()).toBe('2');
    await expect.poll(() => tones(page)).toBe(2 * CHIME);

    // Take asks the server to assign Olena's conversation to this operator.
    const take = page.waitForRequest((request) => request.method() === 'POST' && request.url().endsWith(`/admin/conversations/${olena.sessionId}/take`));
    await rows.first().getByTestId('take-button').click();
    await take;

    // Taken (here by another operator, through the store): shown as taken, no longer counted, and no chime.
    await other.handoffs.take(olena.sessionId, 'Dana', Date.now());
    await expect.poll(() => rows.first().getByTestId('handoff-taken').textContent(), { timeout: 10_000 }).toBe('taken by Dana');
    await expect.poll(() => count.textContent()).toBe('1');
    expect(await rows.first().getByTestId('take-button').isDisabled()).toBe(true);
    expect(await tones(page)).toBe(2 * CHIME);
    await shot('taken');

    // A reload is no news: the count is there, the chime is not.
    await page.reload();
    await expect.poll(() => count.textContent()).toBe('1');
    expect(await tones(page)).toBe(0);

    // Closed handoffs leave the list.
    await other.handoffs.close(olena.sessionId, 'agent', Date.now());
    await other.handoffs.close(ivo.sessionId, 'agent', Date.now());
    await expect.poll(() => page.getByTestId('no-handoffs').isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await count.isHidden()).toBe(true);
    await shot('empty');

    // Take is served (POST /admin/conversations/:id/take): the page logs no error at all.
    expect(errors).toEqual([]);
    await context.close();
  });

  it('fits a phone: the list and its Take buttons are no wider than the screen', async () => {
    const waiting = await conversation('Mira');
    await other.handoffs.open({ sessionId: waiting.sessionId, userId: waiting.userId, reason: 'x'.repeat(300), source: 'tool', at: Date.now() });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await page.goto(`${server.url}/admin#/handoffs`);
    await page.getByTestId('sign-in-token').fill(TEST_SECRETS.adminToken);
    await page.getByTestId('sign-in-submit').click();
    await expect.poll(() => page.getByTestId('handoff-row').count(), { timeout: 10_000 }).toBe(1);
    expect(await page.getByTestId('take-button').isVisible()).toBe(true);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await page.screenshot({ path: join(ARTIFACTS, 'phone.png'), fullPage: true });
    await context.close();
  });
});
