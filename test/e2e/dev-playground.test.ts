import { existsSync, mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { resolve } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer, type DevServer } from '../../src/dev/dev-server.js';
import { roundBilled, sumCosts } from '../../src/domain/money.js';
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

  describe('an agent with prices, focus and replies as actions', () => {
    let shop: DevProject;
    let shopDev: DevServer;

    beforeAll(async () => {
      shop = createDevProject();
      // Integer prices per million tokens: every call's cost has at most 6 places, so the calls add up to the bill.
      shop.write(
        'palaver.config.yaml',
        `agent:
  name: Dev shop
  instructionsDir: instructions
  toolsModule: tools/index.ts
  defaultRole: guest
  replies: actions
roles:
  definitions:
    guest: { tools: [opening_hours, get_my_appointments, get_my_invoices] }
model:
  provider: scripted
  name: scripted
  script: model-replies.yaml
  prices:
    scripted: { input: '2', output: '8' }
focus:
  stages:
    - { id: review, keywords: [appointments], needs: [appointment, invoice], scenario: Go through the appointments. }
    - { id: chat }
  entities:
    - { type: appointment, loadTool: get_my_appointments, ttlSeconds: 60 }
    - { type: invoice, loadTool: get_my_invoices, ttlSeconds: 60 }
database:
  url: sqlite:data/palaver.db
channels:
  web: { enabled: true }
log:
  level: error
`,
      );
      shop.write(
        'tools/index.ts',
        `import { z } from 'zod';
export const tools = [
  { name: 'opening_hours', description: 'Opening hours of a day', input: z.object({ day: z.string() }), readOnly: true, run: ({ day }: { day: string }) => day + ': 9:00-17:00' },
  {
    name: 'get_my_appointments',
    description: 'Upcoming appointments of the person',
    input: z.object({}),
    readOnly: true,
    run: () => [{ id: 41, description: 'Haircut <b>Thursday</b> 10:00' }, { id: 42, description: 'Beard trim Friday 15:30' }],
  },
  {
    name: 'get_my_invoices',
    description: 'Open invoices of the person',
    input: z.object({}),
    readOnly: true,
    run: () => { throw new Error('billing system offline'); },
  },
];
`,
      );
      shop.write(
        'model-replies.yaml',
        `rules:
  - when: open .*?(?<day>monday|saturday)
    tool: opening_hours
    arguments: { day: "{{day | lower}}" }
    reply: '{"actions":[{"type":"send_message","text":"We are open {{result}}.","reply_to":null}]}'
  - when: appointments
    reply: '{"actions":[{"type":"fake_typing","seconds":0.2},{"type":"send_messages","messages":["Thursday at 10:00.","Friday at 15:30."]},{"type":"wait","seconds":0.1},{"type":"ignore","reason":"nothing else to say"}]}'
otherwise: '{"actions":[{"type":"ignore","reason":"small talk"}]}'
`,
      );
      shopDev = await startDevServer({ cwd: shop.dir, port: 0, report: () => {} });
    });

    afterAll(async () => {
      await shopDev?.close();
      shop?.remove();
    });

    it('prices each model call as the turn is billed, and the calls add up to the turn’s cost', async () => {
      const page = await browser.newPage();
      await page.goto(`${shopDev.url}/dev`);
      const reply = await shopDev.palaver!.chat({ userId: 'ada', text: 'Are you open on Saturday?' });
      expect(reply.status).toBe('completed');
      const turn = page.locator('article.turn').filter({ hasText: 'Are you open on Saturday?' });
      await expect.poll(() => turn.locator('.step.reply').count(), { timeout: 10_000 }).toBe(1);
      const costs = await turn.locator('.step.model .cost').allTextContents();
      expect(costs).toHaveLength(2);
      const amounts = costs.map((text) => {
        const [amount, currency] = text.split(' ');
        expect(currency).toBe('USD');
        return amount!;
      });
      for (const amount of amounts) expect(Number(amount)).toBeGreaterThan(0);
      // What the page shows as the turn's cost is what was billed and stored.
      expect(reply.usage.cost).not.toBe('0');
      expect(await turn.locator('.turn-cost').textContent()).toBe(`cost ${reply.usage.cost} USD`);
      expect(sumCosts(amounts)).toBe(reply.usage.cost);
      expect(roundBilled(sumCosts(amounts))).toBe(reply.usage.cost);
      expect(await turn.locator('.calls-cost').count()).toBe(0);
      expect(await turn.locator('.turn-ms').textContent()).toMatch(/^\d+ ms in all$/);
      await page.close();
    });

    it('shows the entities in focus, a type that could not be loaded, and the reply’s actions in order', async () => {
      const page = await browser.newPage();
      await page.goto(`${shopDev.url}/dev`);
      await shopDev.palaver!.chat({ userId: 'grace', text: 'What are my appointments?' });
      const turn = page.locator('article.turn').filter({ hasText: 'What are my appointments?' });
      await expect.poll(() => turn.locator('.step.reply').count(), { timeout: 10_000 }).toBe(1);

      const focus = turn.locator('.step.focus');
      expect(await focus.locator('.title').textContent()).toBe('Focus · stage review (by keyword)');
      const appointments = focus.locator('.entity-type[data-type="appointment"]');
      expect(await appointments.locator('.who').textContent()).toBe('appointment (2)');
      expect(await appointments.locator('li .id').allTextContents()).toEqual(['41', '42']);
      // A loader's text is data: its markup shows as characters.
      expect(await appointments.locator('li .description').allTextContents()).toEqual(['Haircut <b>Thursday</b> 10:00', 'Beard trim Friday 15:30']);
      expect(await focus.locator('b').count()).toBe(0);
      expect(await focus.locator('.entity-type.unavailable[data-type="invoice"] .error').textContent()).toContain('could not be loaded');

      const actions = turn.locator('.step.reply ol.actions li');
      expect(await Promise.all((await actions.all()).map((action) => action.getAttribute('data-kind')))).toEqual(['typing', 'send', 'send', 'wait', 'ignore']);
      expect(await actions.allTextContents()).toEqual([
        'typing 0.2 s',
        'send: Thursday at 10:00.',
        'send: Friday at 15:30.',
        'wait 0.1 s',
        'ignore: nothing else to say',
      ]);
      await page.screenshot({ path: resolve(ARTIFACTS, 'focus-actions.png'), fullPage: true });
      await page.close();
    });
  });

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
