import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ClusterCacheSync, startClusterCacheSync } from '../../src/cluster/cluster-cache-sync.js';
import { PostgresBus } from '../../src/cluster/postgres-bus.js';
import { silentLogger } from '../../src/observability/logger.js';
import { ConversationCache } from '../../src/runtime/conversation-cache.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

const settings = {
  version: 1,
  preferences: { interfaceLanguage: 'en', aiLanguage: 'en', timeZone: 'UTC', country: null },
  privacy: {},
  notification: {},
} as never;
const state = { version: 4, state: { role: null, responseChainId: null, recentToolCalls: [], flows: {} } };
const participant = { user: { id: 'u1' }, accounts: [], session: { id: 's1' } } as never;
const participantKey = { namespace: 'telegram', accountId: 'ada', channel: 'telegram-bot', conversationId: 'chat-1' };

/** One process: its cache, kept in step over its own bus. */
interface Process {
  readonly cache: ConversationCache;
  readonly bus: PostgresBus;
  readonly sync: ClusterCacheSync;
  stop(): Promise<void>;
}

describe('cache kept in step between processes over the cluster bus (PostgreSQL)', () => {
  let database: TestPostgresDatabase;
  const running: Process[] = [];
  beforeAll(async () => {
    database = await createTestPostgresDatabase();
  });
  afterEach(async () => {
    for (const process of running.splice(0)) {
      await process.stop();
      await process.bus.close();
    }
  });
  afterAll(async () => {
    await database?.drop();
  });

  async function startProcess(options: { readonly presenceGraceMs?: number; readonly cache?: ConversationCache } = {}): Promise<Process> {
    const cache = options.cache ?? new ConversationCache({ maxEntries: 100, ttlMs: 3_600_000, historyLimit: 10 });
    const bus = await PostgresBus.open({ url: database.url, minBackoffMs: 20 });
    const sync = await startClusterCacheSync(cache, bus, silentLogger(), options);
    const started = { cache, bus, sync, stop: () => sync.stop() };
    running.push(started);
    return started;
  }

  /** Starts processes and waits until each knows the others (a newcomer forgets its cache when they answer). */
  async function startProcesses(count: number): Promise<Process[]> {
    const processes: Process[] = [];
    for (let index = 0; index < count; index += 1) processes.push(await startProcess());
    await vi.waitFor(() => expect(processes.map((process) => process.sync.peers.count)).toEqual(processes.map(() => count - 1)));
    return processes;
  }

  /** What a process publishes on the `cache` topic. */
  function cacheNotices(process: Process): unknown[] {
    const sent: unknown[] = [];
    const publish = process.bus.publish.bind(process.bus);
    vi.spyOn(process.bus, 'publish').mockImplementation((topic, message) => {
      if (topic === 'cache') sent.push(message);
      return publish(topic, message);
    });
    return sent;
  }

  /** Fills every kind of entry, as turns would. */
  function fill(cache: ConversationCache): void {
    cache.rememberParticipant(participantKey, participant);
    cache.rememberProfile('u1', settings);
    cache.rememberState('u1', state);
    cache.rememberHistory('s1', []);
  }

  it('forgets in the other process what one process changed, and keeps its own write-through', async () => {
    const [a, b] = (await startProcesses(2)) as [Process, Process];
    fill(b.cache);
    // b's own write-throughs (state, history) reach a too: let them arrive before a writes, or a late one forgets a's.
    await vi.waitFor(() => expect(a.cache.generation).toBe(2));
    a.cache.profileChanged('u1', settings);
    await vi.waitFor(() => expect(b.cache.profile('u1')).toBeUndefined());
    expect(a.cache.profile('u1')).toEqual(settings);
    expect(b.cache.state('u1')).toEqual(state);

    a.cache.rememberHistory('s1', []);
    a.cache.rememberState('u1', { ...state, version: 5 });
    await vi.waitFor(() => expect(b.cache.history('s1')).toBeUndefined());
    await vi.waitFor(() => expect(b.cache.state('u1')).toBeUndefined());
    expect(a.cache.state('u1')?.version).toBe(5);

    expect(b.cache.participant(participantKey)).toBeDefined();
    a.cache.forgetAccount('telegram', 'ada');
    await vi.waitFor(() => expect(b.cache.participant(participantKey)).toBeUndefined());
  });

  it("does not keep a profile read while another process's change to it arrived", async () => {
    const [a, b] = (await startProcesses(2)) as [Process, Process];
    // b starts reading the profile from the store...
    const before = b.cache.generation;
    // ...a saves a new one meanwhile, and b hears of it before its read returns the old row.
    a.cache.profileChanged('u1', settings);
    await vi.waitFor(() => expect(b.cache.generation).toBeGreaterThan(before));
    b.cache.rememberProfile('u1', settings, before);
    expect(b.cache.profile('u1')).toBeUndefined();
    // A read that started after it is kept.
    b.cache.rememberProfile('u1', settings, b.cache.generation);
    expect(b.cache.profile('u1')).toEqual(settings);
  });

  it('announces nothing while it is alone, and everything from the moment another process greets it', async () => {
    const a = await startProcess({ presenceGraceMs: 0 });
    const sent = cacheNotices(a);
    fill(a.cache);
    expect(sent).toEqual([]);
    const b = await startProcess();
    fill(b.cache);
    await vi.waitFor(() => expect(a.sync.peers.count).toBe(1));
    a.cache.rememberState('u1', { ...state, version: 5 });
    expect(sent).toEqual([{ kind: 'state', userId: 'u1' }]);
    await vi.waitFor(() => expect(b.cache.state('u1')).toBeUndefined());
    // b says goodbye as it stops: a is alone again.
    await b.stop();
    await vi.waitFor(() => expect(a.sync.peers.count).toBe(0));
    a.cache.rememberHistory('s1', []);
    expect(sent).toHaveLength(1);
  });

  it('announces everything in its first moments, before the others could answer its greeting', async () => {
    const a = await startProcess();
    const sent = cacheNotices(a);
    a.cache.rememberState('u1', state);
    expect(sent).toEqual([{ kind: 'state', userId: 'u1' }]);
  });

  it('forgets what it read before a process already running answered its greeting: that one announced nothing to it until then', async () => {
    const a = await startProcess({ presenceGraceMs: 0 });
    // b's cache holds what it read before a heard of it (a changed it meanwhile, announcing nothing).
    const cache = new ConversationCache({ maxEntries: 100, ttlMs: 3_600_000, historyLimit: 10 });
    fill(cache);
    const b = await startProcess({ cache });
    await vi.waitFor(() => expect(b.cache.state('u1')).toBeUndefined());
    expect(b.cache.profile('u1')).toBeUndefined();
    expect(b.cache.history('s1')).toBeUndefined();
    await vi.waitFor(() => expect([a.sync.peers.count, b.sync.peers.count]).toEqual([1, 1]));
  });

  it('ignores cache messages that are not cache changes', async () => {
    const b = await startProcess();
    fill(b.cache);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      // Anyone with access to the database can NOTIFY: a wrong kind, extra fields, no kind at all.
      for (const message of [{ kind: 'everything' }, { kind: 'state', userId: 'u1', extra: 1 }, { userId: 'u1' }, 'plain text']) {
        await client.query('select pg_notify($1, $2)', ['palaver_cache', JSON.stringify({ from: 'intruder', message })]);
      }
      await client.query('select pg_notify($1, $2)', ['palaver_cache', JSON.stringify({ from: 'other', message: { kind: 'history', sessionId: 's1' } })]);
    } finally {
      await client.end();
    }
    await vi.waitFor(() => expect(b.cache.history('s1')).toBeUndefined());
    expect(b.cache.state('u1')).toEqual(state);
    expect(b.cache.profile('u1')).toEqual(settings);
  });

  it('forgets everything when its listening connection was lost, since changes announced meanwhile never arrive', async () => {
    const b = await startProcess();
    fill(b.cache);
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [
        `palaver-bus-listen:${b.bus.processId}`.slice(0, 63),
      ]);
    } finally {
      await admin.end();
    }
    await vi.waitFor(() => expect(b.cache.profile('u1')).toBeUndefined(), { timeout: 10_000 });
    expect(b.cache.state('u1')).toBeUndefined();
    expect(b.cache.history('s1')).toBeUndefined();
    expect(b.cache.participant(participantKey)).toBeUndefined();
  });
});
