import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DeadLetters } from '../../src/channels/telegram-bot/dead-letters.js';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/open-store.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

// A poison update may carry exactly what a database refuses (NUL, lone surrogates) or be huge: its dead letter must
// be storable on every back end, or the update could never be skipped.

let postgres: TestPostgresDatabase | undefined;
const stores: Store[] = [];
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  await postgres?.drop();
});

const backends: [string, () => Promise<string>][] = [
  ['SQLite', async () => `sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-dead-letters-')), 'palaver.db')}`],
  ['PostgreSQL', async () => (postgres ??= await createTestPostgresDatabase()).url],
];

describe.each(backends)('telegram dead letters on %s', (_name, databaseUrl) => {
  it('keeps an update holding NUL and lone surrogates, and cuts one past 64 KiB to its id and the start of its JSON', async () => {
    const store = await openStore(await databaseUrl());
    stores.push(store);
    const state = {
      get: (key: string) => store.channelState.get('telegram-bot', key),
      set: (key: string, value: string) => store.channelState.set('telegram-bot', key, value),
      delete: (key: string) => store.channelState.delete('telegram-bot', key),
    };
    const letters = new DeadLetters(state, () => new Date('2026-11-27T06:00:00Z'));
    const nasty = { update_id: 11, message: { message_id: 1, chat: { id: 5, type: 'private' }, text: 'a\u0000b \ud800 c' } };
    await letters.keep(11, nasty, { reason: 'failed', attempts: 3, error: 'Error: \u0000 in the text' });
    expect(JSON.parse((await state.get('dead-letter:11'))!)).toEqual({
      reason: 'failed',
      attempts: 3,
      error: 'Error: \u0000 in the text',
      at: '2026-11-27T06:00:00.000Z',
      update: nasty,
    });

    const huge = { update_id: 12, message: { text: 'x'.repeat(100_000) } };
    await letters.keep(12, huge, { reason: 'malformed', attempts: 0, error: 'message.chat: expected object' });
    const kept = JSON.parse((await state.get('dead-letter:12'))!) as { update: { update_id: number; head: string } };
    expect(kept.update.update_id).toBe(12);
    expect(kept.update.head).toHaveLength(64 * 1024);
    expect(JSON.stringify(huge).startsWith(kept.update.head)).toBe(true);
  });
});
