import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { LocalBus } from '../../src/cluster/local-bus.js';
import { PostgresBus } from '../../src/cluster/postgres-bus.js';
import { RedisBus } from '../../src/cluster/redis-bus.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';
import { connectTestRedis, dropTestKeys, testRedisSettings } from '../support/redis.js';
import { clusterBusContract } from './cluster-bus-contract.js';

clusterBusContract('local', { networked: false, open: async (processId) => new LocalBus({ processId }) });

let database: TestPostgresDatabase;
beforeAll(async () => {
  database = await createTestPostgresDatabase();
});
afterAll(async () => {
  await database?.drop();
});

clusterBusContract('PostgreSQL LISTEN/NOTIFY', {
  networked: true,
  open: (processId) => PostgresBus.open({ url: database.url, processId, minBackoffMs: 20, maxBackoffMs: 500 }),
  async killListener(processId) {
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const { rowCount } = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [
        `palaver-bus-listen:${processId}`.slice(0, 63),
      ]);
      if (rowCount !== 1) throw new Error(`expected one listening connection of ${processId}, found ${rowCount}`);
    } finally {
      await admin.end();
    }
  },
});

const redis = testRedisSettings();
afterAll(() => dropTestKeys(redis));

clusterBusContract('Redis pub/sub', {
  networked: true,
  open: (processId) => RedisBus.open({ redis, processId }),
  async killListener(processId) {
    const admin = await connectTestRedis(redis);
    try {
      const clients = (await admin.client.clientList()).filter((client) => client.name === `palaver-bus:${processId}`);
      if (clients.length !== 1) throw new Error(`expected one subscriber of ${processId}, found ${clients.length}`);
      await admin.client.sendCommand(['CLIENT', 'KILL', 'ID', String(clients[0]!.id)]);
    } finally {
      await admin.close();
    }
  },
});
