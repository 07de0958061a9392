import { describe, expect, it } from 'vitest';
import { OwnerTakeover } from '../../src/channels/telegram-user/owner-takeover.js';
import { telegramUserPlugin } from '../../src/channels/telegram-user/plugin.js';
import { PalaverMetrics } from '../../src/observability/metrics.js';
import { FakeChannelContext } from '../channels/fake-pipeline.js';

const MINUTE = 60_000;

describe('telegram user account: owner takeover state', () => {
  it("steps back in a chat for the window after the owner's last message, and answers again after it", async () => {
    const { state } = new FakeChannelContext();
    let now = Date.UTC(2026, 10, 27, 9, 0);
    const takeover = await OwnerTakeover.load({ state, windowMs: 30 * MINUTE, now: () => now });
    expect(takeover.heldUntil('42')).toBeUndefined();
    expect(await takeover.ownerWrote('42', new Date(now))).toMatchObject({ started: true });
    now += 20 * MINUTE;
    expect(takeover.heldUntil('42')?.getTime()).toBe(now + 10 * MINUTE);
    expect(takeover.heldUntil('43')).toBeUndefined();
    // Another message extends the window; it does not start a new takeover.
    expect(await takeover.ownerWrote('42', new Date(now))).toMatchObject({ started: false });
    now += 29 * MINUTE;
    expect(takeover.heldUntil('42')).toBeDefined();
    now += 2 * MINUTE;
    expect(takeover.heldUntil('42')).toBeUndefined();
    expect(takeover.activeCount()).toBe(0);
  });

  it('keeps a takeover across a restart', async () => {
    const { state } = new FakeChannelContext();
    let now = Date.UTC(2026, 10, 27, 9, 0);
    await (await OwnerTakeover.load({ state, windowMs: 30 * MINUTE, now: () => now })).ownerWrote('42', new Date(now));
    now += 5 * MINUTE;
    const restarted = await OwnerTakeover.load({ state, windowMs: 30 * MINUTE, now: () => now });
    expect(restarted.heldUntil('42')?.getTime()).toBe(now + 25 * MINUTE);
    now += 26 * MINUTE;
    expect((await OwnerTakeover.load({ state, windowMs: 30 * MINUTE, now: () => now })).heldUntil('42')).toBeUndefined();
  });

  it('counts an owner message caught up after downtime from when it was written', async () => {
    const { state } = new FakeChannelContext();
    const now = Date.UTC(2026, 10, 27, 12, 0);
    const takeover = await OwnerTakeover.load({ state, windowMs: 30 * MINUTE, now: () => now });
    expect(await takeover.ownerWrote('42', new Date(now - 2 * 60 * MINUTE))).toMatchObject({ started: false });
    expect(takeover.heldUntil('42')).toBeUndefined();
    await takeover.ownerWrote('42', new Date(now - 10 * MINUTE));
    expect(takeover.heldUntil('42')?.getTime()).toBe(now + 20 * MINUTE);
  });

  it('does not step back with a window of 0', async () => {
    const { state } = new FakeChannelContext();
    const takeover = await OwnerTakeover.load({ state, windowMs: 0 });
    await takeover.ownerWrote('42', new Date());
    expect(takeover.heldUntil('42')).toBeUndefined();
  });

  it('reads an unreadable stored value as no takeovers', async () => {
    const { state } = new FakeChannelContext();
    await state.set('owner-takeovers', '{"42":"soon"}');
    expect((await OwnerTakeover.load({ state, windowMs: MINUTE })).activeCount()).toBe(0);
  });

  it('counts takeovers and shows the chats taken over right now in the metrics', async () => {
    const { state } = new FakeChannelContext();
    const metrics = new PalaverMetrics({ channels: [telegramUserPlugin] });
    let now = Date.UTC(2026, 10, 27, 9, 0);
    const takeover = await OwnerTakeover.load({
      state,
      windowMs: 30 * MINUTE,
      now: () => now,
      onTakeover: () => metrics.channel(telegramUserPlugin).ownerTakeovers.inc(),
    });
    metrics.channel(telegramUserPlugin).watchTakenOverChats(() => takeover.activeCount());
    await takeover.ownerWrote('42', new Date(now));
    await takeover.ownerWrote('42', new Date(now));
    await takeover.ownerWrote('43', new Date(now));
    let text = await metrics.registry.metrics();
    expect(text).toMatch(/^palaver_telegram_user_owner_takeovers_total 2$/m);
    expect(text).toMatch(/^palaver_telegram_user_taken_over_chats 2$/m);
    now += 31 * MINUTE;
    text = await metrics.registry.metrics();
    expect(text).toMatch(/^palaver_telegram_user_taken_over_chats 0$/m);
  });
});
