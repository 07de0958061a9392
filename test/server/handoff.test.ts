import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Palaver } from '../../src/app.js';
import { TELEGRAM_BOT_CHANNEL } from '../../src/channels/telegram-bot/address.js';
import type { ScriptedCall } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { createTelegramRig, inboxState, logsWith, type TelegramRig } from '../telegram/telegram-support.js';

let rig: TelegramRig | undefined;
let harness: Harness | undefined;
afterEach(async () => {
  await rig?.close();
  await harness?.close();
  rig = harness = undefined;
});

const EN_NOTICE = 'I have passed our conversation to a person from our team. They will answer you here.';
const RU_NOTICE = 'Ваш разговор передан сотруднику нашей команды. Вам ответят здесь.';

/** A model that hands over when asked for a human (if it has the tool), and otherwise answers. */
function handingOverModel(call: ScriptedCall) {
  const said = lastUserText(call) ?? '';
  if (call.toolNames.includes('handoff') && /human|человек/i.test(said) && !call.messages.some((item) => item.type === 'tool_result'))
    return { text: 'One moment…', toolCalls: [{ name: 'handoff', arguments: { reason: 'the person asks for a human' } }] };
  return { text: `answered: ${said}` };
}

async function sessionOf(palaver: Palaver, chatId: number): Promise<string> {
  const session = await palaver.store.sessions.findByConversation(TELEGRAM_BOT_CHANNEL, String(chatId));
  if (!session) throw new Error(`no session for chat ${chatId}`);
  return session.id;
}

describe('the agent hands over to a person', () => {
  it('tells the person in their language that a person will answer, asks the model no more, pauses the agent and opens the handoff', async () => {
    // The roles' allowlists do not name the tool: it is offered all the same.
    rig = await createTelegramRig(handingOverModel, { quietWindowMs: 100 }, { config: { agent: { tools: ['handoff'] }, roles: { withoutRole: [] } } });
    const { telegram, harness: h, palaver } = rig;
    telegram.sendText({ chatId: 5, text: 'позовите живого человека', from: { id: 5, is_bot: false, first_name: 'Оля', language_code: 'ru' } });
    telegram.sendText({ chatId: 6, text: 'I want a human', from: { id: 6, is_bot: false, first_name: 'Ann', language_code: 'en' } });
    expect((await telegram.waitForMessages(1, { chatId: 5 }))[0]!.text).toBe(RU_NOTICE);
    expect((await telegram.waitForMessages(1, { chatId: 6 }))[0]!.text).toBe(EN_NOTICE);
    // One model call each: the one that asked for the handoff; the model is not asked to write after it.
    expect(h.model.calls).toHaveLength(2);
    expect(h.model.calls.every((call) => call.toolNames.includes('handoff'))).toBe(true);

    const sessionId = await sessionOf(palaver, 6);
    const session = await palaver.store.sessions.findById(sessionId);
    expect(session?.pausedAt).not.toBeNull();
    expect(await palaver.store.handoffs.findOpen(sessionId)).toMatchObject({ reason: 'the person asks for a human', source: 'model', takenBy: null });
    const audit = await palaver.store.adminActions.list({ limit: 10 });
    expect(audit.filter((action) => action.sessionId === sessionId).map((action) => [action.action, action.actor, action.details['source']])).toEqual([
      ['handoff', 'agent', 'model'],
    ]);
    // The notice is stored as Palaver's own reply, after the tool's audit record; the model's text beside the call is not.
    const stored = await palaver.store.messages.listRecent(sessionId, { limit: 10 });
    expect(stored.map((message) => [message.role, message.audience, message.content])).toEqual([
      ['user', 'display', 'I want a human'],
      ['tool', 'audit', expect.stringContaining('Handed over')],
      ['assistant', 'display', EN_NOTICE],
    ]);
    expect(logsWith(h, 'conversation handed to a person, waiting for an operator')).toHaveLength(2);
  });

  it('holds what the person writes while handed over, also after a restart: stored, never answered by the agent', async () => {
    rig = await createTelegramRig(handingOverModel, { quietWindowMs: 100 }, { config: { agent: { tools: ['handoff'] } } });
    const { telegram, harness: h } = rig;
    telegram.sendText({ chatId: 8, text: 'a human please' });
    await telegram.waitForMessages(1, { chatId: 8 });
    const sessionId = await sessionOf(rig.palaver, 8);
    telegram.sendText({ chatId: 8, text: 'hello? anyone?' });
    await expect.poll(() => logsWith(h, 'conversation paused by an operator: messages stored, held until it is resumed').length).toBe(1);
    await rig.palaver.close();

    const second = await rig.start();
    telegram.sendText({ chatId: 8, text: 'still here' });
    await expect.poll(() => inboxState(h)).toMatchObject({ received: 3, queued: 2 });
    await expect.poll(() => logsWith(h, 'conversation paused by an operator: messages stored, held until it is resumed').length).toBeGreaterThanOrEqual(2);
    expect((await second.store.inbound.listQueued(sessionId)).map((record) => record.text)).toEqual(['hello? anyone?', 'still here']);
    expect(telegram.sentTo(8)).toHaveLength(1);
    expect(h.model.calls).toHaveLength(1);
  });

  it("hands over when a tool calls ctx.handoff: the turn stops after that round with Palaver's notice (source tool)", async () => {
    harness = await createHarness((call) =>
      call.messages.some((item) => item.type === 'tool_result')
        ? { text: 'this should never be asked for' }
        : { toolCalls: [{ name: 'refund', arguments: { amount: 900 } }] },
    );
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds an order',
      input: z.object({ amount: z.number() }),
      run: ({ amount }, ctx) => {
        if (amount > 500) ctx.handoff({ reason: `refund of ${amount} EUR is above what the agent may grant` });
        return amount > 500 ? 'A person decides refunds this large.' : 'Refunded.';
      },
    });
    const palaver = await harness.start({}, { tools: [refund] });
    const reply = await palaver.chat({ userId: 'ada', text: 'refund my 900 EUR order' });
    expect(reply.text).toBe(EN_NOTICE);
    expect(harness.model.calls).toHaveLength(1);
    // Without agent.tools the model is not given the built-in tool.
    expect(harness.model.calls[0]!.toolNames).toEqual(['refund']);
    expect(await palaver.store.handoffs.findOpen(reply.sessionId)).toMatchObject({
      reason: 'refund of 900 EUR is above what the agent may grant',
      source: 'tool',
    });
    expect((await palaver.store.sessions.findById(reply.sessionId))?.pausedAt).not.toBeNull();
  });
});

describe('handoff phrases', () => {
  it('hands over on a phrase in the newest message (whole words, any case; a substring in Chinese) without calling the model', async () => {
    harness = await createHarness((call) => ({ text: `answered: ${lastUserText(call)}` }));
    const palaver = await harness.start({ operators: { handoff: { phrases: ['operator', 'живой человек', '人工客服'] } } });
    expect((await palaver.chat({ userId: 'coop', text: 'I am a cooperator' })).text).toBe('answered: I am a cooperator');
    const calls = harness.model.calls.length;

    const english = await palaver.chat({ userId: 'ann', text: 'Can I talk to an OPERATOR, please?' });
    expect(english.text).toBe(EN_NOTICE);
    expect(await palaver.store.handoffs.findOpen(english.sessionId)).toMatchObject({ reason: 'operator', source: 'phrase' });
    const russian = await palaver.chat({ userId: 'olia', text: 'Мне нужен Живой   человек!' });
    expect(await palaver.store.handoffs.findOpen(russian.sessionId)).toMatchObject({ reason: 'живой человек', source: 'phrase' });
    const chinese = await palaver.chat({ userId: 'li', text: '我要人工客服' });
    expect(await palaver.store.handoffs.findOpen(chinese.sessionId)).toMatchObject({ reason: '人工客服', source: 'phrase' });
    expect(harness.model.calls).toHaveLength(calls);
  });
});

describe('working hours in the notice', () => {
  const hours = { timeZone: 'Europe/Kyiv', days: { mon: '09:00-18:00', tue: '09:00-18:00' } };

  it('says "shortly" within the hours, and when the next hours begin outside them, in the person\'s time zone', async () => {
    harness = await createHarness(() => ({ text: 'unused' }));
    const config = { operators: { hours, handoff: { phrases: ['operator'] } }, agent: { timezone: 'America/New_York' } };
    // Monday 13:00 in Kyiv.
    const within = await harness.start(config, { now: () => new Date('2026-06-15T10:00:00Z') });
    expect((await within.chat({ userId: 'ann', text: 'operator' })).text).toBe(
      'I have passed our conversation to a person from our team. They will answer you here shortly.',
    );
    await within.close();
    // Tuesday 19:00 in Kyiv: the next hours begin Monday 09:00 Kyiv, 02:00 in New York.
    const outside = await harness.start(config, { now: () => new Date('2026-06-16T16:00:00Z') });
    expect((await outside.chat({ userId: 'bob', text: 'operator' })).text).toBe(
      'I have passed our conversation to a person from our team. They will answer you here when our working hours begin: Monday, June 22 at 02:00 EDT.',
    );
  });
});
