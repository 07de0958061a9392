import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SessionLease, SessionLeaseHeldError } from '../../src/channels/telegram-user/session-lease.js';
import { DEFAULT_LEASE_TIMINGS, HeldLease, takeoverBoundMs } from '../../src/platform/held-lease.js';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/index.js';

let store: Store;
beforeEach(async () => {
  store = await openStore(`sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-held-lease-')), 'palaver.db')}`);
});
afterEach(async () => {
  await store.close();
});

const KEY = 'telegram-bot:poll:42';

describe('held lease (one process of several does what only one may)', () => {
  it('defaults to a takeover within 3 s of a holder killed without a word', () => {
    expect(DEFAULT_LEASE_TIMINGS).toEqual({ ttlMs: 2_500, renewEveryMs: 1_000, retryEveryMs: 500 });
    expect(takeoverBoundMs(DEFAULT_LEASE_TIMINGS)).toBe(3_000);
  });

  it('a killed holder (no more renewals) keeps the lease until ttl after its last renewal, and not a moment longer', async () => {
    let clock = 1_000_000;
    const now = () => clock;
    const killed = await HeldLease.tryAcquire({ leases: store.channelLeases, key: KEY, holder: 'web-1:10:a', now });
    expect('lease' in killed).toBe(true);
    clock += 900;
    expect(await (killed as { lease: HeldLease }).lease.renew()).toBe(true);
    // Killed here: it renews no more (its timer died with it).
    clock += DEFAULT_LEASE_TIMINGS.ttlMs - 1;
    const early = await HeldLease.tryAcquire({ leases: store.channelLeases, key: KEY, holder: 'web-2:20:b', now });
    expect(early).toMatchObject({ heldBy: { holder: 'web-1:10:a', expiresAt: 1_000_900 + DEFAULT_LEASE_TIMINGS.ttlMs } });
    clock += 1;
    const taken = await HeldLease.tryAcquire({ leases: store.channelLeases, key: KEY, holder: 'web-2:20:b', now });
    expect('lease' in taken && taken.lease.held).toBe(true);
    await (taken as { lease: HeldLease }).lease.release();
    await (killed as { lease: HeldLease }).lease.release();
  });

  it('a restart with the same holder id takes its own lease back at once', async () => {
    let clock = 2_000_000;
    const now = () => clock;
    await HeldLease.tryAcquire({ leases: store.channelLeases, key: KEY, holder: 'web-1:instance-a', now });
    // The process dies and comes back with the same identity well before its lease ran out.
    clock += 100;
    const again = await HeldLease.tryAcquire({ leases: store.channelLeases, key: KEY, holder: 'web-1:instance-a', now });
    expect('lease' in again).toBe(true);
    expect(await store.channelLeases.get(KEY)).toMatchObject({
      holder: 'web-1:instance-a',
      acquiredAt: 2_000_000,
      expiresAt: clock + DEFAULT_LEASE_TIMINGS.ttlMs,
    });
    await (again as { lease: HeldLease }).lease.release();
  });

  it('a holder paused past its lease learns at its next confirm that it lost it, stops, and its release leaves the new holder be', async () => {
    let clock = 5_000_000;
    const now = () => clock;
    const lost: (string | undefined)[] = [];
    const paused = (
      (await HeldLease.tryAcquire({ leases: store.channelLeases, key: KEY, holder: 'old:1:a', now, onLost: (current) => lost.push(current?.holder) })) as {
        lease: HeldLease;
      }
    ).lease;
    expect(await paused.confirm()).toBe(true);
    clock += DEFAULT_LEASE_TIMINGS.ttlMs;
    const next = ((await HeldLease.tryAcquire({ leases: store.channelLeases, key: KEY, holder: 'new:2:b', now })) as { lease: HeldLease }).lease;
    // Woken up: before its next exclusive act it confirms, which renews (its own deadline passed) and fails.
    expect(await paused.confirm()).toBe(false);
    expect(paused.held).toBe(false);
    expect(lost).toEqual(['new:2:b']);
    await paused.release();
    expect((await store.channelLeases.get(KEY))?.holder).toBe('new:2:b');
    expect(await next.confirm()).toBe(true);
    await next.release();
  });

  it('confirms without a database round trip while the last renewal is fresh', async () => {
    let clock = 0;
    const now = () => clock;
    const lease = ((await HeldLease.tryAcquire({ leases: store.channelLeases, key: KEY, now })) as { lease: HeldLease }).lease;
    // Another process steals the row behind its back (it cannot, but this shows confirm trusts a fresh renewal).
    await store.channelLeases.release(KEY, lease.holder);
    expect(await lease.confirm()).toBe(true);
    // Within half a renewal period of its deadline it asks the database, and learns the truth.
    clock = DEFAULT_LEASE_TIMINGS.ttlMs - DEFAULT_LEASE_TIMINGS.renewEveryMs / 2;
    expect(await lease.confirm()).toBe(false);
    await lease.release();
  });

  it('a process standing by takes the lease at its next try once the holder releases it, and stops standing by when told', async () => {
    const timings = { retryEveryMs: 20 };
    const holder = ((await HeldLease.tryAcquire({ leases: store.channelLeases, key: KEY, holder: 'a:1:x', timings })) as { lease: HeldLease }).lease;
    const waiting: string[] = [];
    const standing = HeldLease.standBy({ leases: store.channelLeases, key: KEY, holder: 'b:2:y', timings }, new AbortController().signal, (heldBy) =>
      waiting.push(heldBy.holder),
    );
    await expect.poll(() => waiting).toEqual(['a:1:x']);
    await holder.release();
    const taken = await standing;
    expect(taken?.holder).toBe('b:2:y');

    const stop = new AbortController();
    const third = HeldLease.standBy({ leases: store.channelLeases, key: KEY, holder: 'c:3:z', timings }, stop.signal);
    stop.abort();
    expect(await third).toBeUndefined();
    expect((await store.channelLeases.get(KEY))?.holder).toBe('b:2:y');
    await taken?.release();
  });
});

describe('Telegram user account session lease after a crash', () => {
  it('a start waits out a dead holder lease (no renewals) and takes the session as soon as it runs out', async () => {
    const dead = await store.channelLeases.claim({ channel: 'telegram-user', holder: 'dead:1:x', now: Date.now(), ttlMs: 300 });
    const lease = await SessionLease.acquire({
      leases: store.channelLeases,
      holder: 'next:2:y',
      ttlMs: 300,
      renewEveryMs: 100,
      retryEveryMs: 20,
      waitMs: 5_000,
    });
    const row = (await store.channelLeases.get('telegram-user'))!;
    expect(row.holder).toBe('next:2:y');
    expect(row.acquiredAt).toBeGreaterThanOrEqual(dead.expiresAt);
    await lease.release();
  });

  it('a start still refuses a live holder (renewing) once its wait is over, naming it', async () => {
    const live = await SessionLease.acquire({ leases: store.channelLeases, holder: 'live:1:x', ttlMs: 300, renewEveryMs: 50 });
    await expect(SessionLease.acquire({ leases: store.channelLeases, holder: 'next:2:y', ttlMs: 300, retryEveryMs: 20, waitMs: 400 })).rejects.toThrow(
      SessionLeaseHeldError,
    );
    expect(live.held).toBe(true);
    await live.release();
  });
});
