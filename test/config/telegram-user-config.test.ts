import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfig, secretsOf, telegramUserEnabled } from '../../src/config/index.js';

const API_HASH = '0123456789abcdef0123456789abcdef';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'palaver-config-'));
}

describe('channels.telegramUser', () => {
  it('is off without credentials, with human-paced defaults', () => {
    const user = parseConfig({ model: { name: 'm' } }).channels.telegramUser;
    expect(telegramUserEnabled(user)).toBe(false);
    expect(user).toMatchObject({
      answer: 'everyone',
      ownerTakeoverMinutes: 30,
      importHistoryOnFirstContact: 0,
      quietWindowMs: 2500,
      floodWaitInlineMaxSeconds: 10,
    });
    expect(user.maxWaitMs).toBeUndefined();
  });

  it('is on from TELEGRAM_API_ID / TELEGRAM_API_HASH, and the hash is a secret for the log scrubber', () => {
    const dir = tempDir();
    const { config } = loadConfig({ cwd: dir, env: { PALAVER_MODEL: 'm', TELEGRAM_API_ID: '123456', TELEGRAM_API_HASH: API_HASH } });
    expect(config.channels.telegramUser).toMatchObject({ apiId: 123456, apiHash: API_HASH });
    expect(telegramUserEnabled(config.channels.telegramUser)).toBe(true);
    expect(secretsOf(config)).toContain(API_HASH);
    expect(telegramUserEnabled({ ...config.channels.telegramUser, enabled: false })).toBe(false);
  });

  it('refuses half the credentials, a malformed hash, and enabled without credentials, naming the fix', () => {
    const model = { name: 'm' };
    expect(() => parseConfig({ model, channels: { telegramUser: { apiId: 1 } } })).toThrow(/channels\.telegramUser\.apiHash: set both apiId and apiHash/);
    expect(() => parseConfig({ model, channels: { telegramUser: { apiId: 1, apiHash: 'nothex' } } })).toThrow(/32 hex characters/);
    expect(() => parseConfig({ model, channels: { telegramUser: { enabled: true } } })).toThrow(/my\.telegram\.org/);
    expect(() => loadConfig({ cwd: tempDir(), env: { PALAVER_MODEL: 'm', TELEGRAM_API_ID: 'abc', TELEGRAM_API_HASH: API_HASH } })).toThrow(
      /channels\.telegramUser\.apiId/,
    );
    expect(() => parseConfig({ model, channels: { telegramUser: { answr: 'everyone' } } })).toThrow(/did you mean "answer"/);
  });

  it('answers everyone, contacts, or a list of ids and usernames (normalised)', () => {
    const answer = (value: unknown) => parseConfig({ model: { name: 'm' }, channels: { telegramUser: { answer: value } } }).channels.telegramUser.answer;
    expect(answer('contacts')).toBe('contacts');
    expect(answer([12345, '67890', '@Alice_Smith', 'bob_jones'])).toEqual(['12345', '67890', 'alice_smith', 'bob_jones']);
    expect(() => answer([])).toThrow(/at least one/);
    expect(() => answer(['@a b'])).toThrow(/Telegram username/);
    expect(() => answer('friends')).toThrow(/answer/);
  });

  it('keeps the session file beside the SQLite database by default, or where the config says', () => {
    const dir = tempDir();
    const session = (extra: Record<string, unknown>, env: Record<string, string> = {}) =>
      loadConfig({ cwd: dir, env: { PALAVER_MODEL: 'm', ...env }, overrides: extra }).config.channels.telegramUser.sessionFile;
    expect(session({})).toBe(join(dir, 'data', 'telegram-user.session'));
    expect(session({}, { PALAVER_DB: 'db/agent.db' })).toBe(join(dir, 'db', 'telegram-user.session'));
    expect(session({}, { PALAVER_DB: 'postgres://127.0.0.1/palaver' })).toBe(join(dir, 'data', 'telegram-user.session'));
    expect(session({}, { PALAVER_DB: 'sqlite::memory:' })).toBe(join(dir, 'data', 'telegram-user.session'));
    expect(session({ channels: { telegramUser: { sessionFile: 'secrets/me.session' } } })).toBe(join(dir, 'secrets', 'me.session'));
    const viaFile = tempDir();
    writeFileSync(join(viaFile, 'palaver.config.json'), JSON.stringify({ model: { name: 'm' }, channels: { telegramUser: { sessionFile: 'tg.session' } } }));
    expect(loadConfig({ cwd: dir, env: { PALAVER_CONFIG: join(viaFile, 'palaver.config.json') } }).config.channels.telegramUser.sessionFile).toBe(
      join(viaFile, 'tg.session'),
    );
  });
});
