import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminActions, issuedOperatorToken } from '../../src/admin/api-contract.js';
import type { Palaver } from '../../src/app.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import type { ScriptedCall } from '../../src/testing/index.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

const CHROMIUM = '/usr/bin/chromium';
/** Screenshots of every step, kept after the run (gitignored). */
const ARTIFACTS = resolve('test-artifacts', 'admin-dashboard-take');
const REASON = 'a refund of 900 EUR, above what the agent may grant';
const NOTE = 'Refund approved; it arrives within 3 days.';

// Two operators, each signed in with their own token in their own browser: the conversation view shows an open
// handoff and who took the conversation, live on the other's page, and a take of another's conversation is refused
// with who has it. Olena answers the person and hands the conversation back with a note.

/** Hands over when the person asks for a person, once; answers anything else. */
function script(call: ScriptedCall) {
  const said = lastUserText(call) ?? '';
  if (call.toolNames.includes('handoff') && /person/.test(said) && !call.messages.some((item) => item.type === 'tool_result'))
    return { toolCalls: [{ name: 'handoff', arguments: { reason: REASON } }] };
  return { text: `answered: ${said}` };
}

describe('the dashboard in Chromium: two operators and one conversation handed to a person', () => {
  let browser: Browser;
  let harness: Harness;
  let palaver: Palaver;
  let server: RunningHttpServer;
  const admin = { authorization: `Bearer ${TEST_SECRETS.adminToken}`, 'content-type': 'application/json' };

  beforeAll(async () => {
    // A missing browser must fail loudly: a skipped e2e suite looks like a passing one.
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`apt-get install chromium\` to run the browser tests.`);
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    harness = await createHarness(script);
    palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken }, agent: { tools: ['handoff'] } });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await harness?.close();
    console.log(`dashboard take screenshots: ${ARTIFACTS}`);
  });

  async function addOperator(name: string): Promise<{ id: string; token: string }> {
    const added = await fetch(`${server.url}/admin/operators`, { method: 'POST', headers: admin, body: JSON.stringify({ name }) });
    expect(added.status).toBe(201);
    const { operator, token } = issuedOperatorToken.parse(await added.json());
    return { id: operator.id, token };
  }

  /** A browser of the operator's own, signed in with their token, on the conversation. */
  async function openAs(name: string, token: string, sessionId: string, viewport: { width: number; height: number }) {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await page.goto(`${server.url}/admin#/conversations/${sessionId}`);
    await page.getByTestId('sign-in-token').fill(token);
    await page.getByTestId('sign-in-submit').click();
    await expect.poll(() => page.getByTestId('signed-in-as').textContent()).toBe(name);
    await expect.poll(() => page.getByTestId('live-state').textContent()).toBe('● live');
    const shot = async (step: string) => void (await page.screenshot({ path: join(ARTIFACTS, `${name.toLowerCase()}-${step}.png`), fullPage: true }));
    return { page, errors, shot };
  }

  const text = (page: Page, testid: string) => page.getByTestId(testid).first().textContent();
  const shown = (page: Page, testid: string) => page.getByTestId(testid).count();

  it('shows the handoff and who took it to the other operator live, refuses a second take saying who has it, and resumes with a note', async () => {
    const olena = await addOperator('Olena');
    const mark = await addOperator('Mark');
    await palaver.store.users.resolveAccount({ channel: 'api', accountId: 'oksana', displayName: 'Oksana' });
    const handedOver = await palaver.chat({ userId: 'oksana', text: 'I want a person, not a bot' });
    const { sessionId } = handedOver;

    const o = await openAs('Olena', olena.token, sessionId, { width: 1280, height: 800 });
    // Mark works on a phone.
    const m = await openAs('Mark', mark.token, sessionId, { width: 390, height: 844 });

    // Both see it waiting for a person, and why.
    for (const { page } of [o, m]) {
      await expect.poll(() => text(page, 'detail-handoff-state')).toBe('Waiting for a person');
      expect(await text(page, 'detail-handoff-reason')).toBe(REASON);
      expect(await shown(page, 'detail-take')).toBe(1);
    }
    // Olena's wider page shows the list beside it: the row says it waits for a person, and why.
    const row = o.page.getByTestId('conversation-row').filter({ has: o.page.getByTestId('waiting-for-person') });
    expect(await row.getByTestId('conversation-handoff-reason').textContent()).toBe(`Why: ${REASON}`);
    await o.shot('waiting');
    await m.shot('waiting');

    // Olena takes it.
    await o.page.getByTestId('detail-take').click();
    await expect.poll(() => text(o.page, 'detail-taken')).toBe('Taken by you');
    expect(await shown(o.page, 'detail-take')).toBe(0);
    await expect.poll(() => text(o.page, 'detail-handoff-state')).toBe('Handed to a person · Taken by you');
    await expect.poll(() => o.page.getByTestId('conversation-row').first().getByTestId('taken-by').textContent()).toBe('Taken by you');

    // Mark's page, untouched, shows it at once over the dashboard's live events.
    await expect.poll(() => text(m.page, 'detail-taken'), { timeout: 10_000 }).toBe('Taken by Olena');
    expect(await text(m.page, 'detail-handoff-state')).toBe('Handed to a person · Taken by Olena');
    await m.shot('taken-by-olena');

    // Mark's take is refused, saying who has it; he may take it over on purpose only.
    await m.page.getByTestId('detail-take').click();
    await expect.poll(() => text(m.page, 'take-status')).toBe('Olena has taken this conversation; nothing changed.');
    expect(await text(m.page, 'take-over')).toBe('Take over from Olena');
    expect(await text(m.page, 'detail-taken')).toBe('Taken by Olena');
    await m.shot('take-refused');

    // Olena answers the person, then hands the conversation back with a note for the agent.
    await o.page.getByTestId('agent-text').fill('Hello Oksana, I am Olena. Your refund is approved.');
    await o.page.getByTestId('agent-send').click();
    await expect
      .poll(() => o.page.locator('[data-testid=transcript-message][data-author=operator]').allTextContents())
      .toEqual([expect.stringContaining('Your refund is approved.')]);
    await o.page.getByTestId('resume-note-button').click();
    await o.page.getByTestId('resume-note').fill(NOTE);
    await o.page.getByTestId('resume-note-submit').click();
    await expect.poll(() => shown(o.page, 'detail-paused')).toBe(0);
    expect(await shown(o.page, 'detail-taken')).toBe(0);
    expect(await shown(o.page, 'detail-handoff')).toBe(0);
    expect(await o.page.getByTestId('resume-note-form').isHidden()).toBe(true);
    expect(await o.page.getByTestId('conversation-detail').textContent()).not.toMatch(/null|undefined/);
    const note = o.page.locator('[data-testid=transcript-message][data-role=system]');
    await expect.poll(() => note.allTextContents()).toEqual([expect.stringContaining(NOTE)]);
    expect(await note.locator('.author').textContent()).toBe('Note for the agent (hidden from the person)');
    await o.shot('resumed');

    // Mark's page follows: nobody has it, nothing waits.
    await expect.poll(() => shown(m.page, 'detail-taken'), { timeout: 10_000 }).toBe(0);
    expect(await shown(m.page, 'detail-handoff')).toBe(0);
    expect(await m.page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await m.shot('resumed');

    // The audit names each: Olena took, wrote and handed back; Mark's refused take changed nothing and is not there.
    const audit = adminActions.parse(await (await fetch(`${server.url}/admin/actions`, { headers: admin })).json()).actions;
    expect(
      audit
        .filter((action) => action.sessionId === sessionId)
        .reverse()
        .map((action) => [action.action, action.actor, action.operatorId]),
    ).toEqual([
      ['handoff', 'agent', null],
      ['take', 'Olena', olena.id],
      ['send', 'Olena', olena.id],
      ['resume', 'Olena', olena.id],
    ]);
    // The agent's next turn reads the note.
    await palaver.chat({ userId: 'oksana', text: 'thank you' });
    expect(JSON.stringify(harness.model.calls.at(-1)!.body)).toContain(NOTE);

    expect(o.errors).toEqual([]);
    // The refused take is answered 409: the only error Mark's page may log.
    expect(m.errors.filter((error) => !/409/.test(error))).toEqual([]);
    await o.page.context().close();
    await m.page.context().close();
  });
});
