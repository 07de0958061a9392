import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TelegramSessionFile } from '../../../src/channels/telegram-user/session-store.js';
import { ChannelError } from '../../../src/domain/errors.js';
import { createFakeClient, FakeMtproto, fakeMtprotoLink } from '../../../src/testing/fake-mtproto/index.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const mode = (path: string) => statSync(path).mode & 0o777;

describe('Telegram session file', () => {
  it('is created owner-only in an owner-only folder before mtcute opens it, and narrows a wider file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-session-'));
    const session = new TelegramSessionFile(join(dir, 'nested', 'telegram-user.session'));
    session.ensure();
    expect(mode(session.path)).toBe(0o600);
    expect(mode(join(dir, 'nested'))).toBe(0o700);
    const wide = join(dir, 'wide.session');
    writeFileSync(wide, '', { mode: 0o644 });
    new TelegramSessionFile(wide).ensure();
    expect(mode(wide)).toBe(0o600);
  });

  it('says nobody is signed in for a missing, empty or foreign file, without creating it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-session-'));
    const missing = new TelegramSessionFile(join(dir, 'none.session'));
    expect(missing.isSignedIn()).toBe(false);
    expect(missing.exists()).toBe(false);
    const empty = new TelegramSessionFile(join(dir, 'empty.session'));
    empty.ensure();
    expect(empty.isSignedIn()).toBe(false);
    writeFileSync(join(dir, 'text.session'), 'not a database');
    expect(new TelegramSessionFile(join(dir, 'text.session')).account()).toBeUndefined();
    const error = (() => {
      try {
        missing.requireSignedIn();
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(ChannelError);
    expect((error as ChannelError).code).toBe('not_signed_in');
    expect((error as Error).message).toContain('palaver telegram login');
  });

  it('reads the account mtcute stored at sign-in (id and usernames) from the file alone, and none after log-out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-session-'));
    const session = new TelegramSessionFile(join(dir, 'telegram-user.session'));
    const fake = new FakeMtproto({ signedIn: false, self: { id: 4_300_000_123, firstName: 'Reception', username: 'Front_Desk' } });
    const client = createFakeClient(fakeMtprotoLink(fake), { storage: await session.openStorage() });
    cleanups.push(() => client.destroy());
    const sent = await client.sendCode({ phone: '+15550100' });
    expect(session.isSignedIn()).toBe(false);
    if (!('phoneCodeHash' in sent)) throw new Error('expected a sent code');
    await client.signIn({ phone: '+15550100', phoneCodeHash: sent.phoneCodeHash, phoneCode: fake.phoneCode });
    await expect.poll(() => session.account(), { timeout: 10_000 }).toEqual({ userId: 4_300_000_123, usernames: ['front_desk'] });
    // The key the (fake) key exchange stored is in the file; SQLite's companions are owner-only too.
    expect(mode(session.path)).toBe(0o600);
    for (const suffix of ['-wal', '-shm']) {
      try {
        expect(mode(session.path + suffix)).toBe(0o600);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    await client.logOut();
    await expect.poll(() => session.isSignedIn(), { timeout: 10_000 }).toBe(false);
    await client.destroy();
    session.delete();
    expect(session.exists()).toBe(false);
    expect(() => readFileSync(session.path)).toThrow();
  });
});
