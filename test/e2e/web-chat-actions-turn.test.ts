import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedCall, ScriptedReply } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

const CHROMIUM = '/usr/bin/chromium';

/** The plan a scripted model answers with: it types, sends two messages and reacts to the message it was shown. */
function planFor(call: ScriptedCall): ScriptedReply {
  const lastUser = call.messages.findLast((item) => item.type === 'message' && item.role === 'user');
  const shownId = /^\[message_id: ([^\]]+)\]/.exec(lastUser?.type === 'message' ? String(lastUser.content) : '')?.[1] ?? 'none';
  const actions = [
    { type: 'fake_typing', seconds: 1 },
    { type: 'send_message', text: 'Friday works.', reply_to: null },
    { type: 'send_messages', messages: ['Morning or afternoon?'] },
    { type: 'add_reaction', emoji: '👍', message_id: shownId },
  ];
  return { text: JSON.stringify({ actions }), usage: { input: 10, output: 20 } };
}

/**
 * Runs in the page (as text: the tests compile without the DOM's types). Records each state the person saw:
 * `typing` or `quiet`, the assistant bubbles' texts, and the reaction badges.
 */
const WATCH_SCRIPT = `(() => {
  const seen = (window.seen = []);
  const snapshot = () => {
    const typing = document.querySelector('[data-testid=typing-indicator]').textContent ? 'typing' : 'quiet';
    const bubbles = Array.from(document.querySelectorAll('[data-testid=assistant-message]'), (li) => li.textContent).join(' | ');
    const reactions = Array.from(document.querySelectorAll('[data-testid=reaction]'), (badge) => badge.textContent).join('');
    const state = (typing + ' [' + bubbles + '] ' + reactions).trim();
    if (seen.at(-1) !== state) seen.push(state);
  };
  new MutationObserver(snapshot).observe(document.body, { subtree: true, childList: true, characterData: true });
})()`;

// The whole path in a browser: page → AG-UI → turn → scripted model's plan → checked, stored, carried out → page.
describe('web chat page: a reply carried out as actions', () => {
  let browser: Browser;
  let harness: Harness;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`node scripts/prepare-test-env.mjs\` to install it.`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    harness = await createHarness(planFor);
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  it("shows typing, two bubbles in order and the reaction on the person's message", async () => {
    const palaver = await harness.start({ agent: { replies: 'actions' } });
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    const page = await browser.newPage();
    await page.goto(`${server.url}/`);
    // What the person saw, as it changed: the typing line, the assistant bubbles, the reaction badges.
    await page.evaluate(WATCH_SCRIPT);

    await page.getByTestId('message-input').fill('Can I come on Friday?');
    await page.getByTestId('send-button').click();
    await expect.poll(() => page.getByTestId('send-button').isEnabled(), { timeout: 15_000 }).toBe(true);

    const seen = await page.evaluate<string[]>('window.seen');
    const reached = (state: string): number => seen.indexOf(state);
    // Typing came before each message (the page may see a message and the next typing in one read), each message is
    // its own bubble, the reaction came last, and nothing is left typing at the end.
    expect(reached('typing []')).toBeGreaterThanOrEqual(0);
    expect(reached('typing [Friday works.]')).toBeGreaterThan(reached('typing []'));
    expect(seen.filter((state) => state.startsWith('typing [Friday works. |'))).toEqual([]);
    expect(seen.at(-1)).toBe('quiet [Friday works. | Morning or afternoon?] 👍');
    expect(await page.getByTestId('assistant-message').allTextContents()).toEqual(['Friday works.', 'Morning or afternoon?']);
    const badge = page.getByTestId('user-message').getByTestId('reaction');
    expect(await badge.textContent()).toBe('👍');
    expect(await page.getByTestId('error-line').isHidden()).toBe(true);

    // The model was shown the run id of the person's message, and reacted to that.
    const [call] = harness.model.calls;
    const shown = call!.messages.findLast((item) => item.type === 'message' && item.role === 'user');
    const runId = await page.getByTestId('user-message').getAttribute('data-message-id');
    expect(shown).toMatchObject({ content: `[message_id: ${runId}] Can I come on Friday?` });

    // After a reload the stored conversation shows the same two messages.
    await page.reload();
    await expect.poll(() => page.getByTestId('assistant-message').allTextContents()).toEqual(['Friday works.', 'Morning or afternoon?']);
    await page.close();
    await server.close();
  });
});
