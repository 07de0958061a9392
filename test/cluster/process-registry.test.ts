import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Store } from '../../src/domain/ports/store.js';
import { createLogger } from '../../src/observability/logger.js';
import { openStore } from '../../src/store/open-store.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

// Two containers with the same host name, each running Palaver as pid 1, on one database. Each container is its own
// copy of the registry module (what one Node process knows of the Palavers it runs stays in that process): only the
// database connects them, as in production.

const LEASE_MS = 2_000;
const logger = createLogger({ level: 'silent' });

let postgres: TestPostgresDatabase | undefined;
let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  await postgres?.drop();
  store = postgres = undefined;
});

const DATABASES: readonly { readonly name: string; readonly url: () => Promise<string> }[] = [
  { name: 'SQLite', url: async () => `sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-registry-')), 'palaver.db')}` },
  {
    name: 'PostgreSQL',
    url: async () => {
      postgres = await createTestPostgresDatabase();
      return postgres.url;
    },
  },
];

/** The registry of a new container: a fresh copy of the module, as a separate Node process would load it. */
async function containerRegistry(store: Store, id: string, now: () => number) {
  vi.resetModules();
  const { ProcessRegistry } = await import('../../src/runtime/pipeline/process-registry.js');
  return new ProcessRegistry({ store, logger, id, host: 'palaver', pid: 1, leaseMs: LEASE_MS, now });
}

describe.each(DATABASES)('processes of containers with the same host name and pid, on $name', ({ url }) => {
  it("retires another container's process only once its heartbeat stopped, never while it beats", async () => {
    store = await openStore(await url());
    let clock = 1_000_000;
    const now = () => clock;
    const [firstId, secondId, thirdId] = [`first-${randomUUID()}`, `second-${randomUUID()}`, `third-${randomUUID()}`];
    const first = await containerRegistry(store, firstId, now);
    await first.register();
    const session = await store.sessions.open({
      userId: (await store.users.resolveAccount({ channel: 'console', accountId: 'ann', displayName: 'Ann' })).user.id,
      channel: 'console',
      conversationId: 'ann',
    });
    // The first container is answering a message (its lease is long: only retirement can free it here).
    await store.inbound.accept(
      {
        channel: 'console',
        conversationId: 'ann',
        accountId: 'ann',
        userId: session.userId,
        sessionId: session.id,
        text: 'hello',
        messageId: null,
        dedupeKey: null,
        correlationId: randomUUID(),
        languageHint: null,
        displayName: null,
        conversationKind: 'direct',
      },
      { owner: firstId, leaseMs: 3_600_000 },
    );
    const takeable = (owner: string) =>
      store!.inbound.claimExpired({ owner, leaseMs: LEASE_MS, channels: ['console'], limit: 10 }).then((records) => records.map((record) => record.text));
    const registered = async () => (await store!.processes.list()).map((record) => record.id);

    // A second container starts while the first heartbeats (every half second): the first keeps its work.
    for (let beat = 0; beat < 10; beat++) {
      clock += 500;
      await first.beat();
    }
    const second = await containerRegistry(store, secondId, now);
    expect(await second.register()).toBe(0);
    expect(await registered()).toContain(firstId);
    expect(await takeable(secondId)).toEqual([]);

    // The first container dies: once its heartbeat is stale beyond the lease window, a restart retires it at once.
    clock += LEASE_MS;
    const early = await containerRegistry(store, `early-${randomUUID()}`, now);
    expect(await early.register()).toBe(0);
    expect(await registered()).toContain(firstId);
    clock += 2 * LEASE_MS;
    const third = await containerRegistry(store, thirdId, now);
    expect(await third.register()).toBe(1);
    expect(await registered()).not.toContain(firstId);
    expect(await takeable(thirdId)).toEqual(['hello']);
  });
});
