import { MemoryStorage } from '@mtcute/node';
import { afterEach, describe, expect, it } from 'vitest';
import { TelegramUserChannel } from '../../src/channels/telegram-user/telegram-user-channel.js';
import { FakeMtproto, fakeMtprotoLink } from '../../src/testing/fake-mtproto/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { cancellableSalon, cancellingModel } from '../support/approval-tools.js';

// Tool calls that need the person's yes, in a Telegram user account: no buttons there, so the question says how to
// answer in words and Palaver reads the answer itself. End to end: the real @mtcute/node client on the fake Telegram,
// the real pipeline (SQLite, scripted model over HTTP, outbox).

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function startAccount() {
  const { runs, cancel } = cancellableSalon();
  harness = await createHarness(cancellingModel);
  const fake = new FakeMtproto({ self: { id: 100, firstName: 'Olga' } });
  const channel = new TelegramUserChannel({
    apiId: 1,
    apiHash: '0123456789abcdef0123456789abcdef',
    session: new MemoryStorage(),
    network: fakeMtprotoLink(fake),
    quietWindowMs: 50,
    mtcuteLogLevel: 0,
  });
  const palaver = await harness.start({ channels: { web: { enabled: false } } }, { channels: [channel], tools: [cancel] });
  await expect.poll(() => channel.health.state, { timeout: 15_000 }).toBe('connected');
  return { fake, palaver, runs, model: harness.model };
}

const QUESTION = 'Before I go on, I need your yes:\nCancel appointment a-17\nReply "yes" to go ahead or "no" to cancel.';

describe('telegram user account: a tool call that needs the person’s yes', () => {
  it('asks in words (no buttons); "да" runs the tool once and the answer arrives', async () => {
    const { fake, palaver, runs, model } = await startAccount();
    const vera = fake.addUser({ firstName: 'Vera' });
    fake.incoming(vera.id, 'cancel my appointment please');
    const [question] = await fake.waitForSent(1, { chatId: vera.id });
    // No buttons (a user account cannot send them): the question says how to answer in words.
    expect(question!.text).toBe(QUESTION);
    expect(runs).toEqual([]);
    expect(model.calls).toHaveLength(1);

    fake.incoming(vera.id, 'да');
    const sent = await fake.waitForSent(2, { chatId: vera.id });
    expect(sent.map((message) => message.text)).toEqual([QUESTION, 'Done: Appointment a-17 cancelled.']);
    expect(runs).toHaveLength(1);
    // Asked for the call once; the resumed turn took it from its journal and asked only for the answer.
    expect(model.calls).toHaveLength(2);
    const [approval] = await palaver.store.approvals.list({ limit: 5 });
    expect(approval).toMatchObject({ tool: 'cancel_appointment', status: 'approved', channel: 'telegram-user' });
  });

  it('asks again once when the answer is unclear, then declines on a second unclear one; the tool never runs', async () => {
    const { fake, palaver, runs, model } = await startAccount();
    const max = fake.addUser({ firstName: 'Max' });
    fake.incoming(max.id, 'cancel my appointment');
    await fake.waitForSent(1, { chatId: max.id });

    fake.incoming(max.id, 'something else');
    const [, again] = await fake.waitForSent(2, { chatId: max.id });
    expect(again!.text).toBe('I did not understand. Should I go ahead with this? Please answer "yes" or "no":\nCancel appointment a-17');
    // Asking again is Palaver's own text: no model call.
    expect(model.calls).toHaveLength(1);

    fake.incoming(max.id, 'what is this about');
    const sent = await fake.waitForSent(3, { chatId: max.id });
    expect(sent[2]!.text).toMatch(/^Done: Error: Declined by the person/);
    expect(runs).toEqual([]);
    expect(model.calls).toHaveLength(2);
    const [approval] = await palaver.store.approvals.list({ limit: 5 });
    expect(approval).toMatchObject({ status: 'declined', reason: 'no clear answer after being asked again' });
    // The conversation as stored: asked once, asked again once, answered once.
    const history = await palaver.store.messages.listRecent(approval!.sessionId, { limit: 20, audience: 'display' });
    expect(history.map((message) => `${message.role}: ${message.content.split('\n')[0]}`)).toEqual([
      'user: cancel my appointment',
      'assistant: Before I go on, I need your yes:',
      'user: something else',
      'assistant: I did not understand. Should I go ahead with this? Please answer "yes" or "no":',
      'user: what is this about',
      `assistant: ${sent[2]!.text}`,
    ]);
  });
});
