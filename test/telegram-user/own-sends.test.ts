import { describe, expect, it } from 'vitest';
import { OwnSends } from '../../src/channels/telegram-user/own-sends.js';
import { FakeChannelContext } from '../channels/fake-pipeline.js';

describe("telegram user account: telling our own sends from the owner's", () => {
  it('knows a message it sent by its id once Telegram answered the send', async () => {
    const { state } = new FakeChannelContext();
    const own = new OwnSends({ state });
    await own.willSend('42', 'delivery-1', 'Friday at 10 works.');
    await own.sent('42', 'delivery-1', 501);
    expect(await own.isOwn('42', 501, 'Friday at 10 works.')).toBe(true);
    // Same text typed by hand afterwards, under a new id: the owner's.
    expect(await own.isOwn('42', 502, 'Friday at 10 works.')).toBe(false);
    // The same id in another chat is another message.
    expect(await own.isOwn('43', 501, 'Friday at 10 works.')).toBe(false);
  });

  it('still knows its sent messages by id after a restart (a catch-up that replays them)', async () => {
    const { state } = new FakeChannelContext();
    const before = new OwnSends({ state });
    await before.willSend('42', 'delivery-1', 'Friday at 10 works.');
    await before.sent('42', 'delivery-1', 501);
    const restarted = new OwnSends({ state });
    expect(await restarted.isOwn('42', 501, 'Friday at 10 works.')).toBe(true);
    expect(await restarted.isOwn('42', 502, 'Friday at 10 works.')).toBe(false);
    // The state holds hashes and ids, never the text.
    expect(await state.get('own-sends:42')).not.toContain('Friday');
  });

  it('keeps the last parts of a chat only', async () => {
    const { state } = new FakeChannelContext();
    const own = new OwnSends({ state, maxPerChat: 2, maxIds: 1 });
    for (const id of [1, 2, 3]) await own.sent('42', `d${id}`, id);
    const restarted = new OwnSends({ state });
    expect(await restarted.isOwn('42', 1, 'x')).toBe(false);
    expect(await restarted.isOwn('42', 2, 'x')).toBe(true);
    expect(await restarted.isOwn('42', 3, 'x')).toBe(true);
  });

  it('recognises, after a restart, a part sent just before the crash that its echo brings back', async () => {
    const { state } = new FakeChannelContext();
    await new OwnSends({ state }).willSend('42', 'delivery-1', '  Your table is booked.\n');
    // A new process: no ids in memory; the echo arrives from catch-up.
    const restarted = new OwnSends({ state });
    expect(await restarted.isOwn('42', 777, 'Your table is booked.')).toBe(true);
    // The match settled the pending send: a hand-typed copy is the owner's.
    expect(await restarted.isOwn('42', 778, 'Your table is booked.')).toBe(false);
    // The resend under the same delivery key (Telegram returns the same message) changes nothing.
    await restarted.sent('42', 'delivery-1', 777);
    expect(await restarted.isOwn('42', 777, 'Your table is booked.')).toBe(true);
  });

  it('matches any text an attempt sent (a retry without entities), and no text of another chat', async () => {
    const { state } = new FakeChannelContext();
    const own = new OwnSends({ state });
    await own.willSend('42', 'delivery-1', 'See **you**');
    await own.willSend('42', 'delivery-1', 'See you');
    expect(await own.isOwn('43', 9, 'See you')).toBe(false);
    expect(await new OwnSends({ state }).isOwn('42', 9, 'See you')).toBe(true);
  });

  it('stops matching a part that never got an id after its time to live (it failed for good), but not a sent one', async () => {
    const { state } = new FakeChannelContext();
    let now = 1_000_000;
    const own = new OwnSends({ state, now: () => now, pendingTtlMs: 60_000 });
    await own.willSend('42', 'delivery-1', 'ok');
    await own.sent('42', 'delivery-2', 9);
    now += 60_001;
    const restarted = new OwnSends({ state, now: () => now, pendingTtlMs: 60_000 });
    expect(await restarted.isOwn('42', 5, 'ok')).toBe(false);
    expect(await restarted.isOwn('42', 9, 'sent long ago')).toBe(true);
  });
});
