import { describe, expect, it } from 'vitest';
import { OwnSends } from '../../src/channels/telegram-user/own-sends.js';
import { FakeChannelContext } from '../channels/fake-pipeline.js';

describe('telegram user account: telling our own sends from the owner\'s', () => {
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
    // Nothing pending is left in the state once the send is settled.
    expect(await state.get('own-sends:42')).toBeUndefined();
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

  it('stops matching a pending send after its time to live (a part that failed for good)', async () => {
    const { state } = new FakeChannelContext();
    let now = 1_000_000;
    const own = new OwnSends({ state, now: () => now, pendingTtlMs: 60_000 });
    await own.willSend('42', 'delivery-1', 'ok');
    now += 60_001;
    expect(await own.isOwn('42', 5, 'ok')).toBe(false);
  });

  it('forgets the oldest ids past its bound', async () => {
    const { state } = new FakeChannelContext();
    const own = new OwnSends({ state, maxIds: 2 });
    for (const id of [1, 2, 3]) await own.sent('42', `d${id}`, id);
    expect(await own.isOwn('42', 1, 'x')).toBe(false);
    expect(await own.isOwn('42', 3, 'x')).toBe(true);
  });
});
