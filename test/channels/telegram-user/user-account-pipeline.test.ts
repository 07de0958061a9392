import { afterEach, describe, expect, it } from 'vitest';
import { ChannelRetryLaterError } from '../../../src/domain/errors.js';
import type { ReplyTarget } from '../../../src/domain/ports/channel.js';
import { userTexts } from '../../support/palaver-harness.js';
import { createUserAccountRig, inboxState, waitUntilSettled, type UserAccountRig } from './user-account-support.js';

// The user-account channel in a real Palaver: the real mtcute client, the fake MTProto server under it.
let rig: UserAccountRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('telegram user account through the pipeline', () => {
  it('answers a burst of three messages once, a quiet window after the last', async () => {
    rig = await createUserAccountRig((call) => ({ text: `got: ${userTexts(call).join(' + ')}` }), { quietWindowMs: 600 });
    const { telegram, harness } = rig;
    const ann = telegram.addUser({ firstName: 'Ann' });
    telegram.incoming(ann.id, 'hi');
    await expect.poll(() => inboxState(harness).received, { timeout: 10_000 }).toBe(1);
    telegram.incoming(ann.id, 'I need');
    await expect.poll(() => inboxState(harness).received, { timeout: 10_000 }).toBe(2);
    const lastAt = Date.now();
    telegram.incoming(ann.id, 'a table for two');
    const [reply] = await telegram.waitForSent(1, { chatId: ann.id });
    expect(reply!.text).toBe('got: hi + I need + a table for two');
    expect(reply!.date * 1000).toBeGreaterThanOrEqual(Math.floor((lastAt + 600) / 1000) * 1000);
    await waitUntilSettled(harness, 3);
    expect(harness.model.calls).toHaveLength(1);
    expect(telegram.sent(ann.id)).toHaveLength(1);
  });

  it('shows typing while the turn runs, marks the answered messages read, and reacts', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    rig = await createUserAccountRig(
      async () => {
        await held;
        return { text: 'Done.' };
      },
      { quietWindowMs: 0 },
    );
    const { telegram } = rig;
    const bob = telegram.addUser({ firstName: 'Bob' });
    const asked = telegram.incoming(bob.id, 'please check my booking');
    await telegram.waitForCall('messages.setTyping');
    await telegram.waitForCall('messages.readHistory');
    release();
    await telegram.waitForSent(1, { chatId: bob.id });
    expect(telegram.typing.filter((t) => t.chatId === bob.id).map((t) => t.action)).toContain('sendMessageTypingAction');
    expect(telegram.reads).toEqual([expect.objectContaining({ chatId: bob.id, maxId: asked.id })]);

    const target: ReplyTarget = {
      channel: 'telegram-user',
      conversationId: String(bob.id),
      accountId: String(bob.id),
      inReplyTo: [String(asked.id)],
      correlationId: 'c',
      sessionId: 's',
    };
    await rig.channel.react(target, String(asked.id), '👍');
    expect(telegram.reactions).toEqual([expect.objectContaining({ chatId: bob.id, messageId: asked.id, emoji: '👍' })]);
  });

  it('sends a reply over 4096 characters as several messages, each with its entities', async () => {
    const paragraph = `**Bold start** ${'word '.repeat(190)}end.`;
    const long = Array.from({ length: 6 }, () => paragraph).join('\n\n');
    expect(long.length).toBeGreaterThan(4096);
    rig = await createUserAccountRig(() => ({ text: long }), { quietWindowMs: 0 });
    const { telegram, harness } = rig;
    const cid = telegram.addUser();
    telegram.incoming(cid.id, 'tell me everything');
    await waitUntilSettled(harness, 1);
    const sent = telegram.sent(cid.id);
    expect(sent.length).toBeGreaterThanOrEqual(2);
    for (const message of sent) {
      expect(message.text.length).toBeLessThanOrEqual(4096);
      expect(message.text).not.toContain('**');
      expect(message.entities).toContainEqual(expect.objectContaining({ _: 'messageEntityBold', offset: 0, length: 'Bold start'.length }));
    }
    expect(sent.map((m) => m.text).join('\n\n')).toBe(long.replaceAll('**', ''));
    // One random_id per part, each different.
    expect(new Set(sent.map((m) => m.randomId)).size).toBe(sent.length);
  });

  it('waits out a FLOOD_WAIT of 3 s inside the send and sends the part once, with the same random_id', async () => {
    rig = await createUserAccountRig(() => ({ text: 'Patience pays.' }), { quietWindowMs: 0, floodWaitInlineMaxSeconds: 10 });
    const { telegram, harness } = rig;
    const dan = telegram.addUser();
    telegram.failNext('messages.sendMessage', { code: 420, message: 'FLOOD_WAIT_3' });
    const start = Date.now();
    telegram.incoming(dan.id, 'hello?');
    const [reply] = await telegram.waitForSent(1, { chatId: dan.id, timeoutMs: 20_000 });
    expect(reply!.text).toBe('Patience pays.');
    expect(Date.now() - start).toBeGreaterThanOrEqual(3_000);
    await waitUntilSettled(harness, 1);
    const attempts = telegram.callsOf('messages.sendMessage');
    expect(attempts.map((call) => call.error)).toEqual(['FLOOD_WAIT_3', undefined]);
    const ids = attempts.map((call) => (call.request as { randomId: { toString(): string } }).randomId.toString());
    expect(ids[0]).toBe(ids[1]);
    expect(telegram.sent(dan.id)).toHaveLength(1);
  }, 30_000);

  it('hands a FLOOD_WAIT longer than the inline limit back as ChannelRetryLaterError, and every send in that window', async () => {
    // What the channel tells the outbox; the test above shows the outbox keeping such a part and sending it later.
    rig = await createUserAccountRig(() => ({ text: 'unused' }), { floodWaitInlineMaxSeconds: 10 });
    const { telegram, channel } = rig;
    const eve = telegram.addUser();
    const target: ReplyTarget = {
      channel: 'telegram-user',
      conversationId: String(eve.id),
      accountId: String(eve.id),
      inReplyTo: [],
      correlationId: 'c',
      sessionId: 's',
    };
    telegram.failNext('messages.sendMessage', { code: 420, message: 'FLOOD_WAIT_600' });
    const refused = await channel.send(target, 'first', { deliveryKey: 'part-1' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ChannelRetryLaterError);
    expect((refused as ChannelRetryLaterError).retryAfterMs).toBe(600_000);
    const calls = telegram.callsOf('messages.sendMessage').length;
    const again = await channel.send(target, 'second', { deliveryKey: 'part-2' }).catch((error: unknown) => error);
    expect(again).toBeInstanceOf(ChannelRetryLaterError);
    expect((again as ChannelRetryLaterError).retryAfterMs).toBeGreaterThan(590_000);
    // Not even tried: Telegram would refuse it the same way, and trying again could lengthen the wait.
    expect(telegram.callsOf('messages.sendMessage')).toHaveLength(calls);
    expect(telegram.sent(eve.id)).toEqual([]);
  });

  it('keeps a part through a FLOOD_WAIT longer than the inline limit in the outbox and sends it once when allowed, under the same random_id', async () => {
    // Recovery rounds every 100 ms, so the part leaves as soon as its wait is over.
    rig = await createUserAccountRig(() => ({ text: 'Worth the wait.' }), { quietWindowMs: 0, floodWaitInlineMaxSeconds: 1 }, { inbox: { leaseMs: 300 } });
    const { telegram, harness } = rig;
    const fay = telegram.addUser();
    telegram.failNext('messages.sendMessage', { code: 420, message: 'FLOOD_WAIT_3' });
    const start = Date.now();
    telegram.incoming(fay.id, 'are you there?');
    const [reply] = await telegram.waitForSent(1, { chatId: fay.id, timeoutMs: 20_000 });
    expect(reply!.text).toBe('Worth the wait.');
    expect(Date.now() - start).toBeGreaterThanOrEqual(3_000);
    await waitUntilSettled(harness, 1);
    const attempts = telegram.callsOf('messages.sendMessage');
    expect(attempts.map((call) => call.error)).toEqual(['FLOOD_WAIT_3', undefined]);
    const ids = attempts.map((call) => (call.request as { randomId: { toString(): string } }).randomId.toString());
    expect(ids[0]).toBe(ids[1]);
    expect(telegram.sent(fay.id)).toHaveLength(1);
    expect(harness.logs.filter((line) => String(line['msg']).includes('reply parts stay in the outbox'))).toHaveLength(1);
  }, 30_000);

  it('resumes after a dropped connection and answers the messages that came meanwhile once', async () => {
    rig = await createUserAccountRig((call) => ({ text: `re: ${userTexts(call).slice(-2).join(' + ')}` }), { quietWindowMs: 300 });
    const { telegram, harness, channel } = rig;
    const fay = telegram.addUser();
    telegram.incoming(fay.id, 'before');
    await telegram.waitForSent(1, { chatId: fay.id });
    expect(channel.health.state).toBe('connected');

    telegram.dropConnection();
    await expect.poll(() => channel.health.state, { timeout: 15_000 }).toBe('reconnecting');
    telegram.incoming(fay.id, 'during one');
    telegram.incoming(fay.id, 'during two');
    expect(inboxState(harness).received).toBe(1);
    telegram.restoreConnection();
    await expect.poll(() => channel.health.state, { timeout: 15_000 }).toBe('connected');
    await telegram.waitForSent(2, { chatId: fay.id, timeoutMs: 20_000 });
    await waitUntilSettled(harness, 3);
    expect(telegram.sent(fay.id).map((m) => m.text)).toEqual(['re: before', 're: during one + during two']);
    expect(harness.model.calls).toHaveLength(2);
  }, 40_000);

  it('replaces a client that does not come back after a drop, and the new one catches up', async () => {
    rig = await createUserAccountRig((call) => ({ text: `re: ${userTexts(call).at(-1)}` }), {
      quietWindowMs: 0,
      reconnect: { stallTimeoutMs: 300, initialDelayMs: 50, maxDelayMs: 200 },
    });
    const { telegram, harness, channel } = rig;
    const hal = telegram.addUser();
    const first = channel.client;
    telegram.dropConnection();
    await expect.poll(() => channel.health.state, { timeout: 15_000 }).toBe('reconnecting');
    telegram.incoming(hal.id, 'anyone?');
    // Past the stall timeout the client is given up; its successor waits for the network like any connect.
    const replaced = () => {
      try {
        return channel.client !== first;
      } catch {
        return false; // between the two clients
      }
    };
    await expect.poll(replaced, { timeout: 15_000 }).toBe(true);
    telegram.restoreConnection();
    await expect.poll(() => channel.health.state, { timeout: 15_000 }).toBe('connected');
    const [reply] = await telegram.waitForSent(1, { chatId: hal.id, timeoutMs: 20_000 });
    expect(reply!.text).toBe('re: anyone?');
    await waitUntilSettled(harness, 1);
    expect(telegram.sent(hal.id)).toHaveLength(1);
  }, 40_000);

  it('stops on a revoked session with a clear state, while other channels go on', async () => {
    const signedOut: string[] = [];
    rig = await createUserAccountRig((call) => ({ text: `ok: ${userTexts(call).at(-1)}` }), {
      quietWindowMs: 0,
      onSignedOut: (error) => void signedOut.push(error),
    });
    const { telegram, channel, palaver } = rig;
    const gil = telegram.addUser();
    telegram.revokeSession('SESSION_REVOKED');
    telegram.dropConnection();
    telegram.restoreConnection();
    await expect.poll(() => channel.health, { timeout: 15_000 }).toEqual({ state: 'signed_out', detail: 'SESSION_REVOKED' });
    expect(signedOut).toEqual(['SESSION_REVOKED']);
    // A reply part for this channel now waits in the outbox instead of failing for good.
    const target: ReplyTarget = {
      channel: 'telegram-user',
      conversationId: String(gil.id),
      accountId: String(gil.id),
      inReplyTo: [],
      correlationId: 'c',
      sessionId: 's',
    };
    await expect(channel.send(target, 'hello', { deliveryKey: 'k' })).rejects.toBeInstanceOf(ChannelRetryLaterError);
    // Palaver itself goes on: the API channel still answers.
    expect((await palaver.chat({ userId: 'api-user', text: 'still there?' })).text).toBe('ok: still there?');
  }, 30_000);
  it("imports a chat's earlier messages before its first turn (importHistoryOnFirstContact), once", async () => {
    const seen: string[][] = [];
    rig = await createUserAccountRig(
      (call) => {
        seen.push(call.messages.flatMap((item) => (item.type === 'message' && item.content ? [`${item.role}: ${item.content}`] : [])));
        return { text: 'Welcome back!' };
      },
      { quietWindowMs: 0, importHistoryOnFirstContact: 2 },
    );
    const { telegram, harness } = rig;
    const ann = telegram.addUser({ firstName: 'Ann' });
    // Message ids are per account: service messages elsewhere (never answered) move the counter past the earlier ones.
    const bob = telegram.addUser({ firstName: 'Bob' });
    for (let index = 0; index < 4; index += 1) telegram.serviceMessage(bob.id);
    // What the chat held before Palaver ran: three earlier messages, served by getHistory (never pushed as new).
    const earlier = [
      { id: 1, out: false, text: 'Do you cut curly hair?' },
      { id: 2, out: true, text: 'Yes, Marta does, on Fridays.' },
      { id: 3, out: false, text: 'Lovely, I will think about it.' },
    ].map((m) => ({
      ...m,
      chatId: ann.id,
      fromUserId: m.out ? telegram.self.id : ann.id,
      entities: undefined,
      media: undefined,
      action: undefined,
      replyToId: undefined,
      randomId: undefined,
      date: 1_700_000_000,
    }));
    telegram.on('messages.getHistory', (request) => {
      const { maxId, limit } = request as { maxId: number; limit: number };
      const page = earlier
        .filter((m) => maxId === 0 || m.id < maxId)
        .reverse()
        .slice(0, limit);
      return { _: 'messages.messages', messages: page.map((m) => telegram.messageTl(m)), chats: [], users: [telegram.userTl(ann)] };
    });
    const first = telegram.incoming(ann.id, 'Is Friday still free?');
    expect(first.id).toBeGreaterThan(3);
    await waitUntilSettled(harness, 1);
    expect(telegram.callsOf('messages.getHistory').map((call) => (call.request as { maxId: number }).maxId)).toEqual([first.id]);
    telegram.incoming(ann.id, 'And Saturday?');
    await waitUntilSettled(harness, 2);
    // Once per chat: the second message fetched nothing.
    expect(telegram.callsOf('messages.getHistory')).toHaveLength(1);
    const firstTurn = seen[0]!;
    const at = (text: string) => firstTurn.indexOf(text);
    expect(at('user: Do you cut curly hair?')).toBe(-1);
    expect(at('assistant: Yes, Marta does, on Fridays.')).toBeGreaterThanOrEqual(0);
    expect(at('user: Lovely, I will think about it.')).toBeGreaterThan(at('assistant: Yes, Marta does, on Fridays.'));
    expect(at('user: Is Friday still free?')).toBeGreaterThan(at('user: Lovely, I will think about it.'));
  });
});
