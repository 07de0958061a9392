import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebChannel } from '../../src/channels/web/index.js';
import type { InboundMessage, ReplyTarget } from '../../src/domain/ports/channel.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer, type RunningHttpServer } from '../../src/server/index.js';
import { FakeChannelContext, targetFor } from '../channels/fake-pipeline.js';

const CHROMIUM = '/usr/bin/chromium';

/**
 * The chat page showing a reply carried out as actions. The test stands in for the plan runtime: it calls the web
 * channel's `typing`, `send` and `react` in a plan's order, and the browser shows what a person would see.
 */
describe('web chat page: replies as actions', () => {
  let browser: Browser;
  let server: RunningHttpServer;
  let channel: WebChannel;
  let context: FakeChannelContext;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found; run \`node scripts/prepare-test-env.mjs\` to install it.`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    channel = new WebChannel({ maxInboundChars: 2000, logger: silentLogger() });
    context = new FakeChannelContext();
    await channel.start(context);
    server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), { host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /** Types `text` into the page and resolves with the message as the channel handed it to the pipeline. */
  async function say(page: Page, text: string): Promise<InboundMessage> {
    const before = context.received.length;
    await page.getByTestId('message-input').fill(text);
    await page.getByTestId('send-button').click();
    const messages = await context.waitForMessages(before + 1);
    return messages.at(-1)!;
  }

  function settle(target: ReplyTarget): void {
    channel.settle(target, {
      kind: 'answered',
      parts: [],
      outcome: {
        correlationId: target.correlationId,
        sessionId: target.sessionId,
        userId: 'u',
        reply: '',
        replyMessageId: `reply-${target.correlationId}`,
        status: 'completed',
        usage: { inputTokens: 0, outputTokens: 0, cost: '0', currency: 'USD' },
      },
    });
  }

  it('shows typing, then two bubbles, and the reaction on the message it names', async () => {
    const page = await browser.newPage({ viewport: { width: 900, height: 640 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${server.url}/`);
    const typing = page.getByTestId('typing-indicator');
    const assistant = page.getByTestId('assistant-message');

    const first = await say(page, 'Hi, are you open on Friday?');
    const firstTarget = targetFor(channel, context, [first]);
    await channel.send(firstTarget, 'Hello!', { deliveryKey: 'd-0' });
    settle(firstTarget);
    await expect.poll(() => page.getByTestId('send-button').isEnabled()).toBe(true);

    const second = await say(page, 'Can I bring my dog?');
    const target = targetFor(channel, context, [second]);
    await channel.typing(target);
    await expect.poll(() => typing.textContent()).toBe('Typing…');
    expect(await typing.isVisible()).toBe(true);
    expect(await typing.getAttribute('role')).toBe('status');
    // The typing line replaces "Thinking…".
    expect(await page.locator('.thinking').count()).toBe(0);

    // Model text is shown as text, never as markup.
    await channel.send(target, 'Friday <b>works</b> <img src=x onerror="document.title=1">', { deliveryKey: 'd-1' });
    await expect.poll(() => assistant.count()).toBe(2);
    expect(await typing.textContent()).toBe('');
    expect(await typing.isVisible()).toBe(false);

    await channel.typing(target);
    await expect.poll(() => typing.textContent()).toBe('Typing…');
    await channel.send(target, 'Dogs are welcome.', { deliveryKey: 'd-2', replyTo: second.messageId! });
    await channel.react(target, first.messageId!, '👍');
    settle(target);

    await expect.poll(() => page.getByTestId('send-button').isEnabled()).toBe(true);
    expect(await assistant.allTextContents()).toEqual(['Hello!', 'Friday <b>works</b> <img src=x onerror="document.title=1">', 'Dogs are welcome.']);
    expect(await page.locator('.message img, .message b').count()).toBe(0);
    expect(await typing.textContent()).toBe('');

    // The badge is on the first message, which the reaction named, not on the latest one.
    const users = page.getByTestId('user-message');
    expect(await users.nth(0).getByTestId('reaction').textContent()).toBe('👍');
    expect(await users.nth(0).getByTestId('reaction').getAttribute('aria-label')).toBe('Reaction: 👍');
    expect(await users.nth(1).getByTestId('reaction').count()).toBe(0);
    await page.screenshot({ path: '/tmp/palaver-chat-actions.png' });
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it('takes the typing line away by itself when no message follows', async () => {
    const page = await browser.newPage();
    await page.clock.install();
    await page.goto(`${server.url}/`);
    const message = await say(page, 'Still there?');
    // The page's clock stands still from here: only runFor moves it.
    await page.clock.pauseAt(Date.now() + 60_000);
    const target = targetFor(channel, context, [message]);
    await channel.typing(target);
    const typing = page.getByTestId('typing-indicator');
    await expect.poll(() => typing.textContent()).toBe('Typing…');
    await page.clock.runFor(4_900);
    expect(await typing.textContent()).toBe('Typing…');
    await page.clock.runFor(200);
    expect(await typing.textContent()).toBe('');
    settle(target);
    await page.close();
  });
});
