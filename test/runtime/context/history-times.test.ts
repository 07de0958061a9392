import { afterEach, describe, expect, it } from 'vitest';
import { sequenceScript } from '../../../src/testing/index.js';
import { createHarness, type Harness } from '../../support/palaver-harness.js';
import { readSqliteFile } from '../../support/sqlite-file.js';

// Seed 004 sends the model its history "with dates and message_id". With `agent.historyTimes` each of the person's
// messages shows when it was written, in their profile's time zone; in actions mode its message id too.

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const ZONE = 'Asia/Shanghai';

/** The user messages of a model call, as the model read them. */
function userMessages(call: { messages: readonly { type: string; role?: string; content?: string }[] }): string[] {
  return call.messages.flatMap((item) => (item.type === 'message' && item.role === 'user' ? [item.content ?? ''] : []));
}

/** `Fri 2025-03-14 09:05` of `at` in Shanghai, worked out apart from Palaver's own formatting. */
function shanghaiTime(at: Date): string {
  // Shanghai keeps UTC+8 all year: no daylight saving to get wrong.
  const local = new Date(at.getTime() + 8 * 3_600_000);
  const weekday = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'][local.getUTCDay()];
  return `${weekday} ${local.toISOString().slice(0, 10)} ${local.toISOString().slice(11, 16)}`;
}

/** When the store received each of the person's messages, oldest first. */
function receivedTimes(databaseUrl: string): Date[] {
  return readSqliteFile(databaseUrl, (db) =>
    db.all<{ at: number }>('SELECT received_at AS at FROM inbound_messages ORDER BY received_at').map((row) => new Date(Number(row.at))),
  );
}

describe('agent.historyTimes', () => {
  it("shows when each of the person's messages was written, in their zone, in history and in the new batch", async () => {
    harness = await createHarness(sequenceScript([{ text: 'Noted.' }, { text: 'Yes, on Friday.' }]));
    const palaver = await harness.start({ agent: { historyTimes: true }, profiles: { defaults: { timeZone: ZONE } } });
    await palaver.chat({ userId: 'li', text: 'Book me for Friday' });
    await palaver.chat({ userId: 'li', text: 'Did you get it?' });
    const [first, second] = receivedTimes(harness.databaseUrl);
    const call = harness.model.calls[1]!;
    expect(userMessages(call)).toEqual([`[${shanghaiTime(first!)}] Book me for Friday`, `[${shanghaiTime(second!)}] Did you get it?`]);
    // The agent's own message carries no label: the model would copy one into its replies.
    expect(call.messages).toContainEqual({ type: 'message', role: 'assistant', content: 'Noted.' });
    // The label is the same when the message is new and when it is history: a provider's prompt cache still matches.
    expect(userMessages(harness.model.calls[0]!)).toEqual([`[${shanghaiTime(first!)}] Book me for Friday`]);
  });

  it('puts the time before the message id in actions mode', async () => {
    const plan = JSON.stringify({ actions: [{ type: 'send_message', text: 'Hi' }] });
    harness = await createHarness(sequenceScript([{ text: plan }, { text: plan }]));
    const palaver = await harness.start({ agent: { historyTimes: true, replies: 'actions' }, profiles: { defaults: { timeZone: ZONE } } });
    await palaver.chat({ userId: 'li', text: 'hello' });
    await palaver.chat({ userId: 'li', text: 'again' });
    const [first, second] = receivedTimes(harness.databaseUrl);
    expect(userMessages(harness.model.calls[1]!)).toEqual([
      expect.stringMatching(new RegExp(`^\\[${shanghaiTime(first!)}\\] \\[message_id: m\\d+\\] hello$`)),
      expect.stringMatching(new RegExp(`^\\[${shanghaiTime(second!)}\\] \\[message_id: m\\d+\\] again$`)),
    ]);
  });

  it('is off by default: messages reach the model as they were written', async () => {
    harness = await createHarness(sequenceScript([{ text: 'Noted.' }, { text: 'Yes.' }]));
    const palaver = await harness.start();
    await palaver.chat({ userId: 'li', text: 'Book me for Friday' });
    await palaver.chat({ userId: 'li', text: 'Did you get it?' });
    expect(userMessages(harness.model.calls[1]!)).toEqual(['Book me for Friday', 'Did you get it?']);
  });
});
