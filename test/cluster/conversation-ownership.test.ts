import { afterEach, describe, expect, it } from 'vitest';
import { MemoryChannel } from '../../src/testing/index.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';

// Two Palavers on one SQLite file, as two processes on one machine would run: each conversation's turn runs in one
// of them at a time, and a turn whose claim was taken over stores and sends nothing.

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A model that holds each answer until the test lets it go, and says when it is asked. */
function heldModel() {
  const waiting: Array<() => void> = [];
  const asked: string[] = [];
  let onAsked: (() => void) | undefined;
  return {
    asked,
    script: async (call: Parameters<Parameters<typeof createHarness>[0]>[0]) => {
      asked.push(userTexts(call).join(' | '));
      onAsked?.();
      await new Promise<void>((resolve) => waiting.push(resolve));
      return { text: `answer to ${userTexts(call).at(-1)}` };
    },
    /** Resolves once the model was asked `count` times in all. */
    askedTimes(count: number): Promise<void> {
      return new Promise((resolve) => {
        const check = () => asked.length >= count && resolve();
        onAsked = check;
        check();
      });
    },
    releaseAll(): void {
      waiting.splice(0).forEach((release) => release());
    },
  };
}

describe('one owner per conversation across processes', () => {
  it("runs one conversation's turns one after another when its messages reach two processes, the second seeing the first's reply", async () => {
    const model = heldModel();
    harness = await createHarness(model.script);
    const [chatA, chatB] = [new MemoryChannel({ name: 'chat' }), new MemoryChannel({ name: 'chat' })];
    await harness.start({}, { channels: [chatA] });
    await harness.start({}, { channels: [chatB] });

    const first = await chatA.say('one', { accountId: 'ann', conversationId: 'ann' });
    await model.askedTimes(1);
    const second = await chatB.say('two', { accountId: 'ann', conversationId: 'ann' });
    // B's turn waits for A's: the model is not asked again while A's turn holds the conversation.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(model.asked).toHaveLength(1);
    model.releaseAll();
    expect((await chatA.reply(first)).parts).toEqual(['answer to one']);

    await model.askedTimes(2);
    model.releaseAll();
    expect((await chatB.reply(second)).parts).toEqual(['answer to two']);
    // B's model request holds A's reply: its history was read afresh, not from a cache of before A's turn.
    const history = harness.model.calls[1]!;
    expect(JSON.stringify(history)).toContain('answer to one');
  });

  it('stores and sends nothing from a turn whose conversation another process took over, and answers its message once after', async () => {
    const model = heldModel();
    harness = await createHarness(model.script);
    const chat = new MemoryChannel({ name: 'chat' });
    const palaver = await harness.start({}, { channels: [chat] });
    const said = await chat.say('hello', { accountId: 'bob', conversationId: 'bob' });
    await model.askedTimes(1);

    // This process was paused past its claim: another took the conversation (its claim is later than this one's end).
    const taken = await palaver.store.claims.claim({ channel: 'chat', conversationId: 'bob', owner: 'other-process', now: Date.now() + 60_000, ttlMs: 60_000 });
    expect(taken).toMatchObject({ claimed: true });
    model.releaseAll();
    await expect.poll(() => harness!.logs.some((line) => String(line['msg']).includes('another process took conversation bob over'))).toBe(true);
    const session = await palaver.store.sessions.findByConversation('chat', 'bob');
    expect(await palaver.store.messages.listRecent(session!.id, { limit: 10 })).toEqual([]);
    expect(chat.sent).toEqual([]);
    expect(await (await fetchMetrics(palaver)).match(/palaver_turns_fenced_out_total (\d+)/)?.[1]).toBe('1');

    // The other process ends its turn without answering "hello": this one asks for the conversation again and answers it.
    if (taken.claimed) await palaver.store.claims.release({ channel: 'chat', conversationId: 'bob', owner: 'other-process', token: taken.token });
    await model.askedTimes(2);
    model.releaseAll();
    expect((await chat.reply(said)).parts).toEqual(['answer to hello']);
    const stored = await palaver.store.messages.listRecent(session!.id, { limit: 10 });
    expect(stored.map((message) => message.content)).toEqual(['hello', 'answer to hello']);
    expect(chat.sent.map((sent) => sent.value)).toEqual(['answer to hello']);
  });

  it('records what the model call of a fenced-out turn cost: the turn stores nothing, but the money was spent', async () => {
    const model = heldModel();
    harness = await createHarness(model.script);
    const chat = new MemoryChannel({ name: 'chat' });
    const palaver = await harness.start(
      { model: { prices: { scripted: { input: '1', output: '1' } } }, budgets: { perUserPerDay: '5' } },
      { channels: [chat] },
    );
    const said = await chat.say('hello', { accountId: 'cy', conversationId: 'cy' });
    await model.askedTimes(1);
    const taken = await palaver.store.claims.claim({ channel: 'chat', conversationId: 'cy', owner: 'other-process', now: Date.now() + 60_000, ttlMs: 60_000 });
    model.releaseAll();
    await expect.poll(() => harness!.logs.some((line) => String(line['msg']).includes('another process took conversation cy over'))).toBe(true);
    const session = (await palaver.store.sessions.findByConversation('chat', 'cy'))!;
    const user = (await palaver.store.users.findByAccount('chat', 'cy'))!;
    const today = new Date().toISOString().slice(0, 10);
    // Before, the call was paid and counted nowhere: 0 in the session and in the person's day.
    await expect.poll(async () => (await palaver.store.sessions.findById(session.id))!.cost).not.toBe('0');
    const paid = (await palaver.store.sessions.findById(session.id))!.cost;
    expect(await palaver.store.spend.daily(user.id, today)).toEqual([{ currency: 'USD', cost: paid }]);
    expect(await palaver.store.messages.listRecent(session.id, { limit: 10 })).toEqual([]);

    // The turn that answers instead is counted on top.
    if (taken.claimed) await palaver.store.claims.release({ channel: 'chat', conversationId: 'cy', owner: 'other-process', token: taken.token });
    await model.askedTimes(2);
    model.releaseAll();
    expect((await chat.reply(said)).parts).toEqual(['answer to hello']);
    const total = (await palaver.store.sessions.findById(session.id))!.cost;
    expect(Number(total)).toBeGreaterThan(Number(paid));
    expect(await palaver.store.spend.daily(user.id, today)).toEqual([{ currency: 'USD', cost: total }]);
  });

  it("takes a stopped process's messages over at once when it restarts on the same machine", async () => {
    const model = heldModel();
    harness = await createHarness(model.script);
    const chat = new MemoryChannel({ name: 'chat' });
    // A long lease: only the restart, not the lease running out, can hand the message on within this test.
    const before = await harness.start({ inbox: { leaseMs: 600_000 } }, { channels: [chat] });
    await chat.say('are you there?', { accountId: 'cy', conversationId: 'cy' });
    await model.askedTimes(1);
    // It stops without answering (its grace is over at once); the model's late answer comes after it is gone.
    await before.close({ graceMs: 0 });
    const again = new MemoryChannel({ name: 'chat' });
    await harness.start({ inbox: { leaseMs: 600_000 } }, { channels: [again] });
    await model.askedTimes(2);
    model.releaseAll();
    await expect.poll(() => again.sent.map((sent) => sent.value)).toEqual(['answer to are you there?']);
  });
});

async function fetchMetrics(palaver: { metrics: { registry: { metrics(): Promise<string> } } }): Promise<string> {
  return palaver.metrics.registry.metrics();
}
