import { afterEach, describe, expect, it } from 'vitest';
import type { ModelScript } from '../../../src/testing/index.js';
import { lastUserText } from '../../support/palaver-harness.js';
import { createUserAccountRig, waitUntilSettled, type UserAccountRig } from './user-account-support.js';

// Replies as actions end to end on the Telegram user account: a real Palaver (agent.replies: actions), the real
// mtcute client on the fake MTProto server.
let rig: UserAccountRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

function shownId(call: Parameters<ModelScript>[0]): number {
  const match = /^\[message_id: (\d+)\] /.exec(lastUserText(call) ?? '');
  if (!match) throw new Error(`the model was not shown a message id: ${lastUserText(call)}`);
  return Number(match[1]);
}

const plan = (...actions: readonly Record<string, unknown>[]) => ({ text: JSON.stringify({ actions }) });

describe('telegram user account: replies as actions', () => {
  it('types, sends two messages in order, and reacts to the person’s message', async () => {
    let answeredAt = 0;
    rig = await createUserAccountRig(
      (call) => {
        answeredAt = Date.now();
        return plan(
          { type: 'fake_typing', seconds: 0.05 },
          { type: 'send_messages', messages: ['Hi Ann!', 'What can I do for you?'] },
          { type: 'add_reaction', emoji: '🙏', message_id: shownId(call) },
        );
      },
      { quietWindowMs: 0 },
      // Typing before each message is off: the plan's own typing is a few hundredths of a second.
      { agent: { replies: 'actions', actions: { typingCharsPerSecond: 0 } } },
    );
    const { telegram, harness } = rig;
    const ann = telegram.addUser({ firstName: 'Ann' });
    const asked = telegram.incoming(ann.id, 'hello, are you there?');
    await telegram.waitForCall('messages.sendReaction');
    await waitUntilSettled(harness, 1);

    expect(telegram.sent(ann.id).map((message) => message.text)).toEqual(['Hi Ann!', 'What can I do for you?']);
    expect(telegram.reactions.map(({ chatId, messageId, emoji }) => ({ chatId, messageId, emoji }))).toEqual([
      { chatId: ann.id, messageId: asked.id, emoji: '🙏' },
    ]);
    // The plan's typing shows after the model answered and before the first message; the reaction comes last.
    const firstSentAt = telegram.callsOf('messages.sendMessage')[0]!.at;
    expect(telegram.typing.some((typing) => typing.chatId === ann.id && typing.at >= answeredAt && typing.at <= firstSentAt)).toBe(true);
    const order = telegram.calls.filter((call) => call.method === 'messages.sendMessage' || call.method === 'messages.sendReaction').map((call) => call.method);
    expect(order).toEqual(['messages.sendMessage', 'messages.sendMessage', 'messages.sendReaction']);
  });
});
