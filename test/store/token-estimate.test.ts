import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateTokens } from '../../src/domain/token-estimate.js';
import { KyselyStore, migrateToLatest, openSqliteDatabase } from '../../src/store/index.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'palaver-token-estimate-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('token estimate in the store', () => {
  it('is written into the row once at insert, and computed on read for a row stored before the column existed', async () => {
    const db = openSqliteDatabase(`sqlite:${join(dir, 'estimate.db')}`);
    try {
      await migrateToLatest(db);
      const store = new KyselyStore(db);
      const { user } = await store.users.resolveAccount({ channel: 'console', accountId: 'ada' });
      const session = await store.sessions.open({ userId: user.id, channel: 'console', conversationId: 'c' });
      const content = 'Запишіть мене, будь ласка, на манікюр у четвер.';
      await store.messages.append(session.id, [{ role: 'user', audience: 'display', content }]);
      const column = async () =>
        (await sql<{ token_estimate: number }>`select token_estimate from messages where session_id = ${session.id}`.execute(db)).rows[0]!.token_estimate;
      expect(await column()).toBe(estimateTokens(content));

      // What migration 0008 leaves on older rows: the default 0.
      await sql`update messages set token_estimate = 0 where session_id = ${session.id}`.execute(db);
      const [legacy] = await store.messages.listRecent(session.id, { limit: 1 });
      expect(legacy!.tokenEstimate).toBe(estimateTokens(content));
    } finally {
      await db.destroy();
    }
  });
});
