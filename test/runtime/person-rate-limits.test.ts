import { afterEach, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import { fullCatalogue } from '../../src/i18n/index.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';

// limits.perPerson on a real SQLite file, with the scripted model over real HTTP and a clock the test moves.

const NOTICE = fullCatalogue('en')['limits.perPerson'];

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A clock that stands still until the test moves it. */
function testClock(start = Date.parse('2026-03-01T12:00:00Z')) {
  let at = start;
  return { now: () => new Date(at), advance: (ms: number) => (at += ms) };
}

async function rateLimited(palaver: Palaver, channel: string): Promise<number> {
  const metric = await palaver.metrics.rateLimited.get();
  return metric.values.find((value) => value.labels['channel'] === channel)?.value ?? 0;
}

describe('rate limits per person', () => {
  it('answers N messages a window, then one notice, then stores without answering; a freed window answers again, with the waiting messages in view', async () => {
    harness = await createHarness(() => ({ text: 'answered' }));
    const clock = testClock();
    const palaver = await harness.start({ limits: { perPerson: { messages: 2, per: 'minute' } } }, { now: clock.now });

    const replies: string[] = [];
    for (let index = 1; index <= 5; index += 1) {
      replies.push((await palaver.chat({ userId: 'ann', text: `message ${index}` })).text);
      clock.advance(1_000);
    }
    expect(replies).toEqual(['answered', 'answered', NOTICE, '', '']);
    // Never a model call for a stopped message.
    expect(harness.model.calls).toHaveLength(2);
    expect(await rateLimited(palaver, 'api')).toBe(3);

    // The first counted message leaves the window: one more is answered, and the model sees what waited.
    clock.advance(60_000);
    expect((await palaver.chat({ userId: 'ann', text: 'message 6' })).text).toBe('answered');
    expect(harness.model.calls).toHaveLength(3);
    expect(userTexts(harness.model.calls[2]!)).toEqual(expect.arrayContaining(['message 3', 'message 4', 'message 5', 'message 6']));

    // Over the limit again in a new window: one new notice.
    expect((await palaver.chat({ userId: 'ann', text: 'message 7' })).text).toBe('answered');
    expect((await palaver.chat({ userId: 'ann', text: 'message 8' })).text).toBe(NOTICE);
    expect((await palaver.chat({ userId: 'ann', text: 'message 9' })).text).toBe('');
    expect(harness.model.calls).toHaveLength(4);
  });

  it('counts a person, not a conversation: new conversations do not reset the count', async () => {
    harness = await createHarness(() => ({ text: 'answered' }));
    const palaver = await harness.start({ limits: { perPerson: { messages: 2, per: 'hour' } } }, { now: testClock().now });
    const replies = [];
    for (let index = 1; index <= 4; index += 1) replies.push((await palaver.chat({ userId: 'ann', text: 'hi', conversationId: `ann-${index}` })).text);
    expect(replies).toEqual(['answered', 'answered', NOTICE, '']);
    // Another person has their own count.
    expect((await palaver.chat({ userId: 'bob', text: 'hi' })).text).toBe('answered');
    expect(harness.model.calls).toHaveLength(3);
  });

  it('exempts allowlisted accounts and channels set to false, and keeps counting the others', async () => {
    harness = await createHarness(() => ({ text: 'answered' }));
    const palaver = await harness.start({ limits: { perPerson: { messages: 1, per: 'day', exempt: { accounts: ['api:olena'] } } } }, { now: testClock().now });
    for (let index = 0; index < 3; index += 1) expect((await palaver.chat({ userId: 'olena', text: `note ${index}` })).text).toBe('answered');
    expect((await palaver.chat({ userId: 'ann', text: 'one' })).text).toBe('answered');
    expect((await palaver.chat({ userId: 'ann', text: 'two' })).text).toBe(NOTICE);
    expect(await rateLimited(palaver, 'api')).toBe(1);
    await palaver.close();

    const unlimited = await harness.start({ limits: { perPerson: { messages: 1, per: 'day', channels: { api: false } } } }, { now: testClock().now });
    for (let index = 0; index < 3; index += 1) expect((await unlimited.chat({ userId: 'ann', text: `more ${index}` })).text).toBe('answered');
  });

  it('exempts an allowlisted user id', async () => {
    harness = await createHarness(() => ({ text: 'answered' }));
    const first = await harness.start({}, { now: testClock().now });
    const { sessionId } = await first.chat({ userId: 'ann', text: 'hello' });
    const session = await first.store.sessions.findById(sessionId);
    await first.close();
    const palaver = await harness.start({ limits: { perPerson: { messages: 1, per: 'day', exempt: { users: [session!.userId] } } } }, { now: testClock().now });
    for (let index = 0; index < 3; index += 1) expect((await palaver.chat({ userId: 'ann', text: `again ${index}` })).text).toBe('answered');
  });
});
