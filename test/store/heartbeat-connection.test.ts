import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/open-store.js';
import { createTestMariadbDatabase, type TestMariadbDatabase } from '../support/mariadb.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

// Issue 34, defect 1: lease renewal lagged behind turns waiting on a pool of 10, the process's leases lapsed, and its
// budget claims stopped counting. The heartbeat writes through a connection of its own.

let postgres: TestPostgresDatabase;
let mariadb: TestMariadbDatabase;
beforeAll(async () => {
  [postgres, mariadb] = await Promise.all([createTestPostgresDatabase(), createTestMariadbDatabase()]);
});
afterAll(async () => {
  await Promise.all([postgres?.drop(), mariadb?.drop()]);
});

describe.each([
  { name: 'PostgreSQL', url: () => postgres.url },
  { name: 'MariaDB', url: () => mariadb.url },
])('the heartbeat on $name', ({ url }) => {
  it('renews leases and stamps the process while turns hold every connection of the pool', async () => {
    const store: Store = await openStore(url(), { poolSize: 2 });
    try {
      await store.processes.register({ id: 'busy', host: 'h', pid: 1, startedAt: 1, heartbeatAt: 1 });
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let holding = 0;
      let bothHeld!: () => void;
      const bothIn = new Promise<void>((resolve) => (bothHeld = resolve));
      // Two turns hold the pool's two connections, in transactions that wait (as turns waiting on a user's row lock).
      const turns = [0, 1].map(() =>
        store.transaction(async (tx) => {
          await tx.ping();
          if ((holding += 1) === 2) bothHeld();
          await held;
        }),
      );
      await bothIn;
      // The heartbeat still gets through, on its own connection.
      await store.heartbeat.processes.heartbeat('busy', 5_000);
      expect(await store.heartbeat.inbound.renewLeases('busy', 2_000)).toBe(0);
      expect((await store.heartbeat.processes.list()).find((process) => process.id === 'busy')?.heartbeatAt).toBe(5_000);
      release();
      await Promise.all(turns);
    } finally {
      await store.close();
    }
  });
});
