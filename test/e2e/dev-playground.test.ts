import { existsSync, mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { resolve } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer, type DevServer } from '../../src/dev/dev-server.js';
import { createDevProject, type DevProject } from '../dev/dev-project.js';

const CHROMIUM = '/usr/bin/chromium';
/** Screenshots of the playground, kept after the run (gitignored). */
const ARTIFACTS = resolve('test-artifacts', 'dev-playground');

const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const;

describe('palaver dev playground in Chromium', () => {
  let browser: Browser;
  let project: DevProject;
  let dev: DevServer;

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
    project = createDevProject();
    dev = await startDevServer({ cwd: project.dir, port: 0, report: () => {} });
  });

  afterAll(async () => {
    await browser?.close();
    await dev?.close();
    project?.remove();
  });

  for (const viewport of VIEWPORTS) {
    it(`shows a web chat turn with its model calls, tokens and tool call as it happens (${viewport.name})`, async () => {
      const context = await browser.newContext({ viewport: { width: viewport.width, height: viewport.height } });
      const chat = await context.newPage();
      const playground = await context.newPage();
      await playground.goto(`${dev.url}/dev`);
      await chat.goto(`${dev.url}/`);
      await chat.getByTestId('message-input').fill(`Are you open on Saturday? (${viewport.name})`);
      await chat.getByTestId('send-button').click();
      await expect.poll(() => chat.getByTestId('assistant-message').last().textContent(), { timeout: 10_000 }).toBe('We are open saturday: 9:00-17:00.');

      const turn = playground.locator('article.turn').filter({ hasText: `(${viewport.name})` });
      await expect.poll(() => turn.locator('.step.reply').count(), { timeout: 10_000 }).toBe(1);
      // Two model calls: one asks for the tool, one answers from its result; each with its tokens.
      const models = turn.locator('.step.model');
      expect(await models.count()).toBe(2);
      expect(await models.first().locator('.tokens').textContent()).toMatch(/^\d+ tokens in · \d+ out$/);
      expect(await models.first().textContent()).toContain('asked for opening_hours {"day":"saturday"}');
      const tool = turn.locator('.step.tool');
      expect(await tool.locator('.title').textContent()).toBe('Tool opening_hours');
      expect(JSON.parse((await tool.locator('pre.arguments').textContent()) ?? '')).toEqual({ day: 'saturday' });
      expect(await tool.locator('pre.result').textContent()).toBe('saturday: 9:00-17:00');
      expect(await turn.locator('.step.reply pre.part').textContent()).toBe('We are open saturday: 9:00-17:00.');
      expect(await turn.locator('.figures').first().textContent()).toContain('web');
      // The composed instructions open on demand: the person's section first, then base and role.
      await models.first().locator('summary').first().click();
      const instructions = (await models.first().locator('pre.instructions').textContent()) ?? '';
      expect(instructions).toContain('You are the first version of the agent.');
      expect(instructions).toContain('The person is a guest.');
      // Nothing overflows sideways on a phone.
      expect(await playground.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
      await playground.screenshot({ path: resolve(ARTIFACTS, `${viewport.name}.png`), fullPage: true });
      await context.close();
    });
  }

  it('draws model output as text, never as markup', async () => {
    const page = await browser.newPage();
    await page.goto(`${dev.url}/dev`);
    await dev.palaver!.chat({ userId: 'mallory', text: '<img src=x id=injected onerror="document.title=1">' });
    const turn = page.locator('article.turn').filter({ hasText: 'id=injected' });
    await expect.poll(() => turn.locator('.step.reply pre.part').count(), { timeout: 10_000 }).toBe(1);
    expect(await turn.locator('.step.reply pre.part').textContent()).toContain('<img src=x id=injected');
    expect(await page.locator('#injected').count()).toBe(0);
    await page.close();
  });

  it('is served to loopback names only', async () => {
    // A page elsewhere whose name resolves to 127.0.0.1 (DNS rebinding) sends its own name; fetch cannot set Host.
    const status = await new Promise<number | undefined>((done, fail) => {
      const url = new URL(`${dev.url}/dev/api/turns`);
      request({ host: url.hostname, port: url.port, path: url.pathname, headers: { host: 'attacker.example' } }, (response) => {
        response.resume();
        done(response.statusCode);
      })
        .on('error', fail)
        .end();
    });
    expect(status).toBe(403);
    expect((await fetch(`${dev.url}/dev/api/turns`)).status).toBe(200);
  });
});
