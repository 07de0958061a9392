import { mkdtempSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeLease, SessionLease, SessionLeaseHeldError } from '../../../src/channels/telegram-user/session-lease.js';
import type { Store } from '../../../src/domain/ports/store.js';
import { openStore } from '../../../src/store/index.js';

let store: Store;
beforeEach(async () => {
  store = await openStore(`sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-lease-')), 'palaver.db')}`);
});
afterEach(async () => {
  await store.close();
});

describe('Telegram session lease', () => {
  it('refuses a second process, naming the holder (host, pid, since when), and frees the session on release', async () => {
    let clock = Date.parse('2026-11-27T08:00:00Z');
    const now = () => clock;
    const first = await SessionLease.acquire({ leases: store.channelLeases, now });
    expect(first.holder).toMatch(new RegExp(`^${hostname()}:${process.pid}:`));
    clock += 1_000;
    const refused = await SessionLease.acquire({ leases: store.channelLeases, holder: 'web-2:4242:abcd', now }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SessionLeaseHeldError);
    expect((refused as Error).message).toContain(`process ${process.pid} on host ${hostname()} since 2026-11-27T08:00:00.000Z`);
    expect((refused as Error).message).toContain('stop that process first');
    await first.release();
    await first.release();
    expect(first.held).toBe(false);
    const second = await SessionLease.acquire({ leases: store.channelLeases, holder: 'web-2:4242:abcd', now });
    expect(await SessionLease.current(store.channelLeases, { now: clock })).toMatchObject({ holder: 'web-2:4242:abcd' });
    await second.release();
    expect(await SessionLease.current(store.channelLeases)).toBeUndefined();
  });

  it('stays held while renewed, and an expired one (a crashed holder) is taken over; the old holder learns it lost it', async () => {
    let clock = 1_000_000;
    const now = () => clock;
    const lost: (string | undefined)[] = [];
    const crashed = await SessionLease.acquire({
      leases: store.channelLeases,
      holder: 'old:1:a',
      ttlMs: 30_000,
      now,
      onLost: (lease) => lost.push(lease?.holder),
    });
    clock += 25_000;
    expect(await crashed.renew()).toBe(true);
    clock += 25_000;
    // 50 s after the start, but 25 s after the renewal: still held.
    await expect(SessionLease.acquire({ leases: store.channelLeases, holder: 'new:2:b', ttlMs: 30_000, now })).rejects.toThrow(SessionLeaseHeldError);
    clock += 10_000;
    const next = await SessionLease.acquire({ leases: store.channelLeases, holder: 'new:2:b', ttlMs: 30_000, now });
    expect(await crashed.renew()).toBe(false);
    expect(crashed.held).toBe(false);
    expect(lost).toEqual(['new:2:b']);
    expect(next.held).toBe(true);
    await next.release();
  });

  it('renews on its own timer', async () => {
    const lease = await SessionLease.acquire({ leases: store.channelLeases, ttlMs: 600, renewEveryMs: 50 });
    const first = (await store.channelLeases.get(lease.channel))!.expiresAt;
    await expect.poll(async () => (await store.channelLeases.get(lease.channel))!.expiresAt, { timeout: 10_000 }).toBeGreaterThan(first);
    await lease.release();
  });

  it('describes a holder id of another shape as it is', () => {
    expect(describeLease({ channel: 'telegram-user', holder: 'someone', acquiredAt: 0, expiresAt: 1 })).toMatch(/^"someone" since 1970/);
  });
});
