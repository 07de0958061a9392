import { afterEach, describe, expect, it } from 'vitest';
import type { ModelScript } from '../../src/testing/index.js';
import { lastUserText } from '../support/palaver-harness.js';
import { createTelegramRig, logsWith, waitUntilSettled, type TelegramRig } from './telegram-support.js';

// Replies as actions end to end on the Telegram bot: a real Palaver (SQLite file, scripted model over HTTP) whose
// bot channel answers with plans (channels.telegram.replies: actions), against the fake Bot API through grammY.
// Typing before each message is off (typingCharsPerSecond: 0): the plans' own waits are a few hundredths of a second.
let rig: TelegramRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const QUICK = { agent: { actions: { typingCharsPerSecond: 0 } } };

/** The id Palaver showed the model in front of the person's last message (`[message_id: N] …`). */
function shownId(call: Parameters<ModelScript>[0]): number {
  const match = /^\[message_id: (\d+)\] /.exec(lastUserText(call) ?? '');
  if (!match) throw new Error(`the model was not shown a message id: ${lastUserText(call)}`);
  return Number(match[1]);
}

const plan = (...actions: readonly Record<string, unknown>[]) => ({ text: JSON.stringify({ actions }) });

describe('telegram bot: replies as actions', () => {
  it('types, sends two messages in order, and reacts to the person’s message', async () => {
    let answeredAt = 0;
    rig = await createTelegramRig(
      (call) => {
        answeredAt = Date.now();
        return plan(
          { type: 'fake_typing', seconds: 0.05 },
          { type: 'send_messages', messages: ['Hello!', 'How can I help?'] },
          { type: 'add_reaction', emoji: '👍', message_id: shownId(call) },
        );
      },
      // Drafts on: the plan's JSON must never show as a live draft.
      { quietWindowMs: 50, replies: 'actions', drafts: true },
      { config: QUICK },
    );
    const { telegram, harness } = rig;
    const update = telegram.sendText({ chatId: 4100, text: 'hi there' });
    const asked = (update['message'] as { message_id: number }).message_id;
    await telegram.waitForCall('setMessageReaction');
    await waitUntilSettled(harness, 1);

    const sent = telegram.sentTo(4100);
    expect(sent.map((message) => message.text)).toEqual(['Hello!', 'How can I help?']);
    expect(telegram.reactions.map(({ chatId, messageId, emoji }) => ({ chatId, messageId, emoji }))).toEqual([{ chatId: 4100, messageId: asked, emoji: '👍' }]);
    // The plan's typing shows after the model answered and before the first message; the reaction comes last.
    const typedAt = telegram.callsOf('sendChatAction').map((call) => call.at);
    expect(typedAt.some((at) => at >= answeredAt && at <= sent[0]!.at)).toBe(true);
    const order = telegram.calls.filter((call) => call.method === 'sendMessage' || call.method === 'setMessageReaction').map((call) => call.method);
    expect(order).toEqual(['sendMessage', 'sendMessage', 'setMessageReaction']);
    expect(harness.model.calls).toHaveLength(1);
    expect(telegram.callsOf('sendMessageDraft')).toEqual([]);
  });

  it('quotes the message a send_message names, and a reaction Telegram refuses does not stop the plan', async () => {
    rig = await createTelegramRig(
      (call) =>
        plan(
          { type: 'add_reaction', emoji: '❤️', message_id: shownId(call) },
          { type: 'send_message', text: 'Yes, we are open until 6.', reply_to: shownId(call) },
        ),
      { quietWindowMs: 50, replies: 'actions' },
      { config: QUICK },
    );
    const { telegram, harness } = rig;
    telegram.failNext('setMessageReaction', { code: 400, description: 'Bad Request: message to react not found' });
    const update = telegram.sendText({ chatId: 4200, text: 'are you open today?' });
    const asked = (update['message'] as { message_id: number }).message_id;
    const [reply] = await telegram.waitForMessages(1, { chatId: 4200 });
    await waitUntilSettled(harness, 1);
    expect(reply).toMatchObject({ text: 'Yes, we are open until 6.', replyToMessageId: asked });
    expect(telegram.reactions).toEqual([]);
    const refused = logsWith(harness, "could not add the reply plan's reaction");
    expect(refused).toHaveLength(1);
    expect(refused[0]!['err']).toMatchObject({ message: expect.stringContaining('message to react not found') });
  });
  it('refuses a send_messages of 1,000 texts as 1,000 separate messages would be, and sends only the repaired plan', async () => {
    const thousand = Array.from({ length: 1_000 }, (_, index) => `spam ${index}`);
    let answers = 0;
    rig = await createTelegramRig(
      // The first answer floods; the repair (second call) answers within the limits.
      () => (++answers === 1 ? plan({ type: 'send_messages', messages: thousand }) : plan({ type: 'send_messages', messages: ['One.', 'Two.', 'Three.'] })),
      { quietWindowMs: 50, replies: 'actions' },
      { config: QUICK },
    );
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 4300, text: 'talk to me' });
    await waitUntilSettled(harness, 1);

    expect(telegram.sentTo(4300).map((message) => message.text)).toEqual(['One.', 'Two.', 'Three.']);
    expect(harness.model.calls).toHaveLength(2);
    const refused = logsWith(harness, 'model answer refused as reply actions');
    expect(refused.map((line) => line['reason'])).toEqual(['too_many_actions']);
  });

  it('counts the typing before messages toward maxTotalWaitSeconds', async () => {
    let answeredAt = 0;
    const answer = () => {
      answeredAt = Date.now();
      return plan({ type: 'send_messages', messages: ['a'.padEnd(30, '.'), 'b'.padEnd(30, '.'), 'c'.padEnd(30, '.')] });
    };
    rig = await createTelegramRig(
      answer,
      { quietWindowMs: 50, replies: 'actions' },
      {
        // 3 s of typing per message at 10 chars/s, but the whole plan may take 1 s: only the first message gets typing.
        config: { agent: { actions: { typingCharsPerSecond: 10, maxTotalWaitSeconds: 1 } } },
      },
    );
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 4400, text: 'hello' });
    await telegram.waitForMessages(3, { chatId: 4400, timeoutMs: 15_000 });
    await waitUntilSettled(harness, 1);

    // The first message got the 1 s of typing; the others went out without any, so the plan took about 1 s, not 9.
    const sent = telegram.sentTo(4400);
    expect(telegram.callsOf('sendChatAction').filter((call) => call.at >= sent[0]!.at)).toEqual([]);
    expect(sent[2]!.at - answeredAt).toBeLessThan(5_000);
  });
});
