import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { convertCost } from '../../src/domain/money.js';
import type { BudgetCaps, Store } from '../../src/domain/ports/store.js';
import { KyselyStore, migrateToLatest, openPostgresDatabase, openSqliteDatabase } from '../../src/store/index.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

let dir: string;
let postgres: TestPostgresDatabase;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'palaver-reservations-'));
  postgres = await createTestPostgresDatabase();
});
afterAll(async () => {
  await postgres?.drop();
  await rm(dir, { recursive: true, force: true });
});

// The store's clock, moved by hand: leases run out when the test says so.
let clock = Date.parse('2026-03-01T12:00:00Z');
const now = () => clock;

let files = 0;
const backends = [
  { name: 'SQLite', open: async () => openSqliteDatabase(`sqlite:${join(dir, `store-${(files += 1)}.db`)}`) },
  { name: 'PostgreSQL', open: async () => openPostgresDatabase(postgres.url) },
];

const DAY = '2026-03-01';
const RATES = { CNY: '7.10' };
/** Caps in USD; amounts stored in CNY are converted at 7.10. */
const caps = (limits: { perUserPerDay?: string; perSession?: string }): BudgetCaps => ({
  ...limits,
  inCapCurrency: (amount, currency) => convertCost(amount, currency, 'USD', RATES),
});

describe.each(backends)('budget reservations on $name', ({ open }) => {
  let store: Store;
  afterEach(async () => {
    await store?.close();
  });

  async function start() {
    const db = await open();
    await migrateToLatest(db);
    store = new KyselyStore(db, { now });
    const { user } = await store.users.resolveAccount({ channel: 'api', accountId: randomUUID() });
    const session = await store.sessions.open({ userId: user.id, channel: 'api', conversationId: randomUUID() });
    /** A turn: its first message, queued and leased to `owner`, and its reservation request. */
    const turn = async (amount: string, options: { owner?: string; leaseMs?: number; currency?: string; sessionId?: string } = {}) => {
      const owner = options.owner ?? 'process-a';
      const on = options.sessionId === undefined ? session : (await store.sessions.findById(options.sessionId))!;
      const accepted = await store.inbound.accept(
        {
          channel: 'api',
          conversationId: on.conversationId,
          accountId: 'a',
          userId: user.id,
          sessionId: on.id,
          text: 'hi',
          messageId: null,
          dedupeKey: null,
          correlationId: randomUUID(),
          languageHint: null,
          displayName: null,
          conversationKind: 'direct',
        },
        { owner, leaseMs: options.leaseMs ?? 15_000 },
      );
      if (!accepted.accepted) throw new Error('not accepted');
      return {
        turnId: accepted.record.id,
        owner,
        liveWithinMs: 15_000,
        userId: user.id,
        day: DAY,
        sessionId: on.id,
        amount,
        currency: options.currency ?? 'USD',
      };
    };
    return { user, session, turn };
  }

  it("reserves up to the cap exactly, counting the day's spend in every currency, and refuses beyond it", async () => {
    const { user, turn } = await start();
    await store.spend.addDaily(user.id, DAY, '0.2', 'USD');
    await store.spend.addDaily(user.id, DAY, '1.42', 'CNY'); // 0.2 USD
    const limit = caps({ perUserPerDay: '1' });
    // 0.4 spent + 0.6 = exactly the cap: allowed.
    expect(await store.spend.reserve(await turn('0.6'), limit)).toEqual({ reserved: true });
    // Anything more passes it: refused, naming what is committed (spent and reserved).
    expect(await store.spend.reserve(await turn('0.0000000001'), limit)).toEqual({ reserved: false, cap: 'perUserPerDay', committed: '1' });
    // Another day is another budget.
    expect(await store.spend.reserve({ ...(await turn('0.6')), day: '2026-03-02' }, limit)).toEqual({ reserved: true });
  });

  it('lets exactly as many of 30 turns reserving at once as the cap fits', async () => {
    const { turn } = await start();
    const turns = await Promise.all(Array.from({ length: 30 }, () => turn('0.25')));
    const outcomes = await Promise.all(turns.map((request) => store.spend.reserve(request, caps({ perUserPerDay: '1' }))));
    expect(outcomes.filter((outcome) => outcome.reserved)).toHaveLength(4);
  });

  it("counts a reservation only while its turn's message is queued under the reserving process's live lease", async () => {
    const { turn } = await start();
    const limit = caps({ perUserPerDay: '1' });
    const crashed = await turn('0.6', { owner: 'crashed', leaseMs: 10_000 });
    expect(await store.spend.reserve(crashed, limit)).toEqual({ reserved: true });
    expect((await store.spend.reserve(await turn('0.6'), limit)).reserved).toBe(false);

    // The process died: once its lease runs out, its claim no longer counts.
    clock += 10_001;
    const afterCrash = await turn('0.6');
    expect(await store.spend.reserve(afterCrash, limit)).toEqual({ reserved: true });
    // Another process takes the crashed turn's message over: the old claim stays dead; the turn reserves afresh.
    expect(await store.inbound.claimExpired({ owner: 'heir', leaseMs: 15_000, channels: ['api'], limit: 10 })).toHaveLength(1);
    expect((await store.spend.reserve({ ...crashed, owner: 'heir' }, limit)).reserved).toBe(false);

    // Answered, a turn's message no longer holds its claim, even if its reservation row was left behind.
    const [reply] = await store.messages.append(afterCrash.sessionId, [{ role: 'assistant', audience: 'display', content: 'done' }]);
    await store.inbound.markAnswered([afterCrash.turnId], { id: reply!.id, seq: reply!.seq });
    expect(await store.spend.reserve({ ...crashed, owner: 'heir' }, limit)).toEqual({ reserved: true });
  });

  it('keeps counting a claim whose lease lapsed while its process runs (its heartbeat is recent), and drops it once the heartbeat stops', async () => {
    const { turn } = await start();
    const limit = caps({ perUserPerDay: '1' });
    await store.processes.register({ id: 'busy', host: 'h', pid: 1, startedAt: clock, heartbeatAt: clock });
    const busy = await turn('0.6', { owner: 'busy', leaseMs: 2_000 });
    expect(await store.spend.reserve(busy, limit)).toEqual({ reserved: true });
    // The busy process's lease renewal lags behind its turns (the defect: its claims stopped counting and 20 turns of
    // one user were let in): its heartbeat is still recent, so the claim stands.
    clock += 5_000;
    await store.processes.heartbeat('busy', clock);
    expect((await store.spend.reserve(await turn('0.6'), limit)).reserved).toBe(false);
    // Even when another process took the message over meanwhile: the busy one may still be paying for its call.
    expect(await store.inbound.claimExpired({ owner: 'heir', leaseMs: 15_000, channels: ['api'], limit: 10 })).not.toHaveLength(0);
    expect((await store.spend.reserve({ ...busy, owner: 'heir' }, limit)).reserved).toBe(false);
    // Its heartbeat stops (it died, or was paused beyond the window): the claim no longer counts.
    clock += 15_001;
    expect(await store.spend.reserve({ ...busy, owner: 'heir' }, limit)).toEqual({ reserved: true });
  });

  it("counts the asking process's own claims whatever its lease and heartbeat say", async () => {
    const { turn } = await start();
    const limit = caps({ perUserPerDay: '1' });
    const mine = await turn('0.6', { owner: 'me', leaseMs: 1_000 });
    expect(await store.spend.reserve(mine, limit)).toEqual({ reserved: true });
    clock += 60_000;
    // Not registered, lease long gone: to another process it is dead, to itself it runs.
    expect((await store.spend.reserve(await turn('0.6', { owner: 'me' }), limit)).reserved).toBe(false);
    expect(await store.spend.reserve(await turn('0.6', { owner: 'other' }), limit)).toEqual({ reserved: true });
  });

  it("replaces a turn's claim when it reserves again, and drops it on release", async () => {
    const { turn } = await start();
    const limit = caps({ perUserPerDay: '1' });
    const first = await turn('0.6');
    expect(await store.spend.reserve(first, limit)).toEqual({ reserved: true });
    // The same turn run again (after a failure to store): one claim, not two.
    expect(await store.spend.reserve(first, limit)).toEqual({ reserved: true });
    const second = await turn('0.6');
    expect((await store.spend.reserve(second, limit)).reserved).toBe(false);
    // Another process's release of the turn leaves this process's claim alone.
    await store.spend.release(first.turnId, 'process-b');
    expect((await store.spend.reserve(second, limit)).reserved).toBe(false);
    await store.spend.release(first.turnId, first.owner);
    expect(await store.spend.reserve(second, limit)).toEqual({ reserved: true });
    // Releasing what is not reserved is fine.
    await store.spend.release(randomUUID(), first.owner);
  });

  it("counts a summary's claim while its summary claim is held by a running process, and not once the claim ends or the process stops", async () => {
    const { user, session, turn } = await start();
    const limit = caps({ perUserPerDay: '1' });
    await store.processes.register({ id: 'summariser', host: 'h', pid: 2, startedAt: clock, heartbeatAt: clock });
    const summary = async () => {
      const claimId = await store.summaries.claim({ sessionId: session.id, owner: 'summariser', now: clock, ttlMs: 60_000 });
      const reservation = {
        turnId: claimId!,
        owner: 'summariser',
        liveWithinMs: 15_000,
        userId: user.id,
        day: DAY,
        sessionId: session.id,
        amount: '0.6',
        currency: 'USD',
      };
      expect(await store.spend.reserve(reservation, limit)).toEqual({ reserved: true });
      return claimId!;
    };
    const written = await summary();
    expect((await store.spend.reserve(await turn('0.6'), limit)).reserved).toBe(false);
    // Its version stored (or its claim given up): the claim ends, and so does what it held of the budget.
    await store.summaries.release(session.id, written);
    const next = await turn('0.6');
    expect(await store.spend.reserve(next, limit)).toEqual({ reserved: true });

    await store.spend.release(next.turnId, next.owner);
    const held = await summary();
    expect(held).toBeDefined();
    // The summarising process stops while it holds the claim: past its heartbeat window its claim no longer counts.
    clock += 15_001;
    const after = await turn('0.3');
    expect(await store.spend.reserve(after, limit)).toEqual({ reserved: true });
  });

  it("holds the session cap against the session's cost and its other turns' claims", async () => {
    const { session, turn } = await start();
    await store.sessions.addUsage(session.id, { inputTokens: 1, outputTokens: 1, cost: '2.84', currency: 'CNY' }); // 0.4 USD
    const limit = caps({ perSession: '1' });
    expect(await store.spend.reserve(await turn('0.3'), limit)).toEqual({ reserved: true });
    expect(await store.spend.reserve(await turn('0.4'), limit)).toEqual({ reserved: false, cap: 'perSession', committed: '0.7' });
    // Another session of the same user has its own cap.
    const other = await store.sessions.open({ userId: session.userId, channel: 'api', conversationId: randomUUID() });
    expect(await store.spend.reserve(await turn('0.4', { sessionId: other.id }), limit)).toEqual({ reserved: true });
  });
});
