import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Migrator } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KyselyStore, migrateToLatest, migrations, openSqliteDatabase } from '../../src/store/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'palaver-profiles-migration-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('adds the profiles table to a database that already took 0009_focus (written before 0005 existed)', async () => {
  const db = await openSqliteDatabase(`sqlite:${join(dir, 'released.db')}`);
  try {
    // The schema of the release before 0005: 0001–0004 and 0009_focus; everything else came later.
    const released = Object.fromEntries(Object.entries(migrations('sqlite')).filter(([name]) => name < '0005' || name === '0009_focus'));
    expect((await new Migrator({ db, provider: { getMigrations: async () => released } }).migrateToLatest()).error).toBeUndefined();

    const applied = await migrateToLatest(db);
    expect(applied).toContain('0005_profiles');
    const store = new KyselyStore(db);
    const { user } = await store.users.resolveAccount({ channel: 'console', accountId: 'ada' });
    await store.profiles.save(user.id, '{"version":1}');
    expect((await store.profiles.get(user.id))?.raw).toBe('{"version":1}');
  } finally {
    await db.destroy();
  }
});
