import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/domain/ports/store.js';
import { parseUserState, type UserState } from '../../src/runtime/context/user-state.js';
import { rebaseUserState, saveTurnState, updateUserState } from '../../src/runtime/context/user-state-update.js';
import { openStore } from '../../src/store/open-store.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

const empty: UserState = { role: null, responseChainId: null, responseChainAt: null, recentToolCalls: [], flows: {} };
const call = (name: string) => ({ name, arguments: '{}', ok: true, at: '2026-01-01T00:00:00.000Z' });

describe('user state saved by two processes at once (PostgreSQL)', () => {
  let database: TestPostgresDatabase;
  let first: Store;
  let second: Store;
  beforeAll(async () => {
    database = await createTestPostgresDatabase();
    // Two stores with pools of their own: two processes on one database.
    first = await openStore(database.url);
    second = await openStore(database.url);
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await database?.drop();
  });

  async function stateOf(userId: string): Promise<{ state: UserState; version: number }> {
    const record = await first.userState.get(userId);
    return { state: parseUserState(record?.raw).state, version: record?.version ?? 0 };
  }

  it("keeps both turns' changes when two turns of one user end at once, each in its own transaction", async () => {
    const { id } = (await first.users.ensureUser({ id: 'ada' })).user;
    await first.userState.save(id, { ...empty, flows: { cart: { items: 1 } }, recentToolCalls: [call('look')] });
    const read = await stateOf(id);
    // Both turns started from version 1. The first sets the role and a wizard step; the second adds to the cart.
    const oneTurn = {
      ...read.state,
      role: 'buyer',
      flows: { ...read.state.flows, wizard: { step: 2 } },
      recentToolCalls: [...read.state.recentToolCalls, call('pick')],
    };
    const otherTurn = { ...read.state, flows: { cart: { items: 2 } }, recentToolCalls: [...read.state.recentToolCalls, call('add')] };
    let releaseFirst!: () => void;
    const firstHolds = new Promise<void>((resolve) => (releaseFirst = resolve));
    let firstSaved!: () => void;
    const firstHasSaved = new Promise<void>((resolve) => (firstSaved = resolve));
    // The first turn saves and holds its transaction open; the second saves meanwhile (it waits on the row lock) and
    // finds the version moved once the first commits.
    const one = first.transaction(async (tx) => {
      const saved = await saveTurnState(tx.userState, id, read, oneTurn);
      firstSaved();
      await firstHolds;
      return saved;
    });
    await firstHasSaved;
    const other = second.transaction((tx) => saveTurnState(tx.userState, id, read, otherTurn));
    releaseFirst();
    const [a, b] = await Promise.all([one, other]);
    expect(a).toMatchObject({ version: 2, rebased: false });
    expect(b).toMatchObject({ version: 3, rebased: true });
    const { state, version } = await stateOf(id);
    expect(version).toBe(3);
    expect(state.role).toBe('buyer');
    expect(state.flows).toEqual({ cart: { items: 2 }, wizard: { step: 2 } });
    expect(state.recentToolCalls.map((recent) => recent.name)).toEqual(['look', 'pick', 'add']);
    // What the second process caches is what was saved.
    expect(b.state).toEqual(state);
  });

  it('loses no update when many read-change-saves of one user race from two processes', async () => {
    const { id } = (await first.users.ensureUser({ id: 'bob' })).user;
    const increments = Array.from({ length: 12 }, (_, index) =>
      updateUserState((index % 2 === 0 ? first : second).userState, id, (state) => ({
        ...state,
        flows: { ...state.flows, counter: Number(state.flows['counter'] ?? 0) + 1, [`by${index}`]: true },
      })).catch((error: unknown) => error as Error),
    );
    const results = await Promise.all(increments);
    const failures = results.filter((result) => result instanceof Error);
    const { state } = await stateOf(id);
    // Every save either landed or failed loudly: the counter counts exactly the ones that landed.
    expect(state.flows['counter']).toBe(results.length - failures.length);
    for (const failure of failures) expect(failure).toMatchObject({ name: 'StoreError', code: 'conflict' });
    expect(Object.keys(state.flows).filter((key) => key.startsWith('by'))).toHaveLength(results.length - failures.length);
  });
});

describe('rebaseUserState', () => {
  const base: UserState = {
    ...empty,
    role: 'guest',
    responseChainId: 'r1',
    responseChainAt: { sessionId: 's1', seq: 4 },
    flows: { a: 1, b: 2 },
    recentToolCalls: [call('one')],
  };

  it('takes their values for what ours left alone and ours for what it changed, a removed namespace included', () => {
    const ours = { ...base, flows: { a: 1, c: 3 } };
    const theirs = { ...base, role: 'admin', flows: { a: 9, b: 2 }, responseChainId: 'r2', responseChainAt: { sessionId: 's2', seq: 7 } };
    expect(rebaseUserState(base, ours, theirs)).toEqual({ ...theirs, flows: { a: 9, c: 3 } });
  });

  it('keeps the chain id and its point together, and a reset of the tool calls', () => {
    const ours = { ...base, responseChainId: null, responseChainAt: null, recentToolCalls: [] };
    const theirs = { ...base, recentToolCalls: [call('one'), call('two')] };
    expect(rebaseUserState(base, ours, theirs)).toEqual({ ...theirs, responseChainId: null, responseChainAt: null, recentToolCalls: [] });
  });
});
