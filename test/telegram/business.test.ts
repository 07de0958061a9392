import { afterEach, describe, expect, it } from 'vitest';
import type { Channel, ReplyTarget } from '../../src/domain/ports/channel.js';
import { createTelegramRig, logsWith, userTexts, waitUntilSettled, type TelegramRig } from './telegram-support.js';

let rig: TelegramRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const OWNER = { id: 900, first_name: 'Olga', language_code: 'en' };
const CUSTOMER = { id: 333, first_name: 'Carl', language_code: 'en' };

describe('telegram bot: Telegram Business', () => {
  it('answers a business message through its connection, marks it read and shows typing through it', async () => {
    rig = await createTelegramRig((call) => ({ text: `We do: ${userTexts(call).at(-1)}` }), { quietWindowMs: 100 });
    const { telegram } = rig;
    telegram.businessConnection({ id: 'bc-1', owner: OWNER, rights: { can_reply: true, can_read_messages: true } });
    const update = telegram.businessMessage({ chatId: CUSTOMER.id, from: CUSTOMER, connectionId: 'bc-1', text: 'Do you have rooms?' });
    const [reply] = await telegram.waitForMessages(1, { chatId: CUSTOMER.id });
    expect(reply).toMatchObject({ text: 'We do: Do you have rooms?', businessConnectionId: 'bc-1' });
    const messageId = (update['business_message'] as { message_id: number }).message_id;
    expect(telegram.callsOf('readBusinessMessage').map((c) => c.params)).toEqual([
      { business_connection_id: 'bc-1', chat_id: CUSTOMER.id, message_id: messageId },
    ]);
    const typing = telegram.callsOf('sendChatAction');
    expect(typing.length).toBeGreaterThanOrEqual(1);
    for (const call of typing) expect(call.params).toMatchObject({ chat_id: CUSTOMER.id, action: 'typing', business_connection_id: 'bc-1' });
    // No draft in a business chat: the chat is the owner's.
    expect(telegram.callsOf('sendMessageDraft')).toHaveLength(0);
  });

  it('does not answer what the owner writes, and does not mark read without that right', async () => {
    rig = await createTelegramRig(() => ({ text: 'Answer.' }), { quietWindowMs: 100 });
    const { telegram, harness } = rig;
    telegram.businessConnection({ id: 'bc-2', owner: OWNER, rights: { can_reply: true } });
    telegram.businessMessage({ chatId: CUSTOMER.id, from: OWNER, connectionId: 'bc-2', text: 'Hi Carl, the owner here.' });
    telegram.businessMessage({ chatId: CUSTOMER.id, from: CUSTOMER, connectionId: 'bc-2', text: 'Thanks!' });
    await telegram.waitForMessages(1, { chatId: CUSTOMER.id });
    // The owner's message came first in that chat and was handled first: only the customer's is stored.
    await waitUntilSettled(harness, 1);
    expect(harness.model.calls).toHaveLength(1);
    expect(userTexts(harness.model.calls[0]!)).toEqual(['Thanks!']);
    expect(telegram.callsOf('readBusinessMessage')).toHaveLength(0);
  });

  it('stops replies cleanly once the connection is disabled: no answer, and a send refuses with a clear error', async () => {
    rig = await createTelegramRig(() => ({ text: 'Answer.' }), { quietWindowMs: 100 });
    const { telegram, harness } = rig;
    telegram.businessConnection({ id: 'bc-3', owner: OWNER });
    telegram.businessMessage({ chatId: CUSTOMER.id, from: CUSTOMER, connectionId: 'bc-3', text: 'first' });
    await telegram.waitForMessages(1, { chatId: CUSTOMER.id });
    telegram.businessConnection({ id: 'bc-3', owner: OWNER, enabled: false });
    await telegram.waitForCall('getUpdates', (call) => Number(call.params['offset']) > telegram.updates.at(-1)!.update_id);
    telegram.businessMessage({ chatId: CUSTOMER.id, from: CUSTOMER, connectionId: 'bc-3', text: 'second' });
    await telegram.waitForCall('getUpdates', (call) => Number(call.params['offset']) > telegram.updates.at(-1)!.update_id);
    await waitUntilSettled(harness, 1);
    expect(harness.model.calls).toHaveLength(1);
    expect(telegram.sentTo(CUSTOMER.id)).toHaveLength(1);
    expect(logsWith(harness, 'connection is disabled')).toHaveLength(1);

    const channel = rig.palaver.channels.find((c) => c.name === 'telegram-bot') as Channel;
    const target: ReplyTarget = {
      channel: 'telegram-bot',
      conversationId: `business:bc-3:${CUSTOMER.id}`,
      accountId: String(CUSTOMER.id),
      inReplyTo: [],
      correlationId: 'c-1',
      sessionId: 's-1',
    };
    await expect(channel.send(target, 'late reply')).rejects.toMatchObject({ code: 'business_connection_disabled' });
    expect(telegram.sentTo(CUSTOMER.id)).toHaveLength(1);
  });

  it('keeps business connections across a restart', async () => {
    rig = await createTelegramRig(() => ({ text: 'Answer.' }), { quietWindowMs: 100 });
    const { telegram } = rig;
    telegram.businessConnection({ id: 'bc-4', owner: OWNER, rights: { can_reply: true, can_read_messages: true } });
    await telegram.waitForCall('getUpdates', (call) => Number(call.params['offset']) > telegram.updates.at(-1)!.update_id);
    await rig.palaver.close();
    await rig.start();
    telegram.businessMessage({ chatId: CUSTOMER.id, from: CUSTOMER, connectionId: 'bc-4', text: 'still there?' });
    const [reply] = await telegram.waitForMessages(1, { chatId: CUSTOMER.id });
    expect(reply!.businessConnectionId).toBe('bc-4');
    // Known from the store: Telegram was not asked about the connection.
    expect(telegram.callsOf('getBusinessConnection')).toHaveLength(0);
    expect(telegram.callsOf('readBusinessMessage')).toHaveLength(1);
  });
});
