import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/domain/ports/store.js';
import { LocalIdentityResolver } from '../../src/identity/local-identity.js';
import { linkPhone, type PhonePolicy } from '../../src/identity/phone-linking.js';
import { openStore } from '../../src/store/index.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

let dir: string;
let files = 0;
let postgres: TestPostgresDatabase;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'palaver-phones-'));
  postgres = await createTestPostgresDatabase();
  await (await openStore(postgres.url)).close();
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await postgres?.drop();
});

const BACK_ENDS: readonly (readonly [string, () => Promise<Store>])[] = [
  ['SQLite', () => openStore(`sqlite:${join(dir, `phones-${(files += 1)}.db`)}`)],
  ['PostgreSQL', () => openStore(postgres.url, { migrate: false })],
];

const RELINK: PhonePolicy = { defaultRegion: 'UA', onConflict: 'relink', trustTyped: false };
const CONFLICT: PhonePolicy = { defaultRegion: 'UA', onConflict: 'conflict', trustTyped: false };

describe.each(BACK_ENDS)('phone linking on %s', (_name, open) => {
  let store: Store;

  beforeEach(async () => {
    store = await open();
  });

  afterEach(async () => {
    await store.close();
  });

  /** A Ukrainian mobile number no other test uses, in the local form people type, and as stored. */
  function freshPhone(): { readonly local: string; readonly digits: string } {
    const subscriber = String(Math.floor(Math.random() * 1e7)).padStart(7, '0');
    return { local: `067 ${subscriber.slice(0, 3)} ${subscriber.slice(3, 5)} ${subscriber.slice(5)}`, digits: `38067${subscriber}` };
  }

  async function account(channel: string): Promise<{ readonly channel: string; readonly accountId: string; readonly userId: string }> {
    const accountId = `${channel}-${randomUUID()}`;
    const { user } = await store.users.resolveAccount({ channel, accountId });
    return { channel, accountId, userId: user.id };
  }

  const userOf = async (who: { channel: string; accountId: string }) => (await store.users.findByAccount(who.channel, who.accountId))!;

  it('sets a typed number on a user without one, normalised, and audits it', async () => {
    const web = await account('web');
    const phone = freshPhone();
    expect(await linkPhone(store, { ...web, phone: phone.local, source: 'typed' }, CONFLICT)).toEqual({ status: 'set' });
    expect((await userOf(web)).phone).toBe(phone.digits);
    expect(await store.identityEvents.listByUser(web.userId)).toMatchObject([
      { kind: 'phone_set', channel: 'web', accountId: web.accountId, actor: 'system', details: { source: 'typed' } },
    ]);
    expect(await linkPhone(store, { ...web, phone: `+${phone.digits}`, source: 'typed' }, CONFLICT)).toEqual({ status: 'unchanged' });
  });

  it('refuses a number that is not one, with the reason', async () => {
    const web = await account('web');
    expect(await linkPhone(store, { ...web, phone: '067 12', source: 'typed' }, CONFLICT)).toEqual({ status: 'invalid', reason: 'The number is too short.' });
    expect((await userOf(web)).phone).toBeNull();
  });

  it('never lets a typed number replace a phone or move an account, and tells nobody whose number it is', async () => {
    const owner = await account('telegram');
    const attacker = await account('web');
    const phone = freshPhone();
    await linkPhone(store, { ...owner, phone: phone.digits, source: 'channel' }, RELINK);

    // The attacker types the owner's number: nothing happens, under either policy.
    for (const policy of [RELINK, CONFLICT]) {
      expect(await linkPhone(store, { ...attacker, phone: phone.local, source: 'typed' }, policy)).toEqual({ status: 'ignored' });
    }
    expect((await userOf(attacker)).id).toBe(attacker.userId);
    expect((await userOf(attacker)).phone).toBeNull();
    expect((await userOf(owner)).phone).toBe(phone.digits);
    expect(await store.identityEvents.listByUser(attacker.userId)).toEqual([]);

    // A typed number never replaces the user's own.
    const other = freshPhone();
    expect(await linkPhone(store, { ...owner, phone: other.local, source: 'typed' }, RELINK)).toEqual({ status: 'ignored' });
    expect((await userOf(owner)).phone).toBe(phone.digits);
  });

  it('relinks an account that gives a verified number another user owns, with its sessions on that channel, and audits it', async () => {
    const owner = await account('web');
    const phone = freshPhone();
    await store.users.setPhone(owner.userId, phone.digits, 'admin');
    const telegram = await account('telegram');
    const chat = await store.sessions.open({ userId: telegram.userId, channel: 'telegram', conversationId: `chat-${randomUUID()}` });
    // The account's own conversation: it wrote there.
    await store.inbound.accept(
      {
        channel: 'telegram',
        conversationId: chat.conversationId,
        accountId: telegram.accountId,
        userId: telegram.userId,
        sessionId: chat.id,
        text: 'hi',
        messageId: null,
        dedupeKey: null,
        correlationId: randomUUID(),
        languageHint: null,
        displayName: null,
        conversationKind: 'direct',
      },
      { owner: 'test', leaseMs: 60_000 },
    );

    const outcome = await linkPhone(store, { ...telegram, phone: phone.digits, source: 'channel' }, RELINK);
    expect(outcome).toEqual({ status: 'relinked', fromUserId: telegram.userId, toUserId: owner.userId });
    expect((await userOf(telegram)).id).toBe(owner.userId);
    expect((await store.sessions.findById(chat.id))?.userId).toBe(owner.userId);
    expect((await store.users.listAccounts(owner.userId)).map((linked) => linked.channel).sort()).toEqual(['telegram', 'web']);
    const [event] = await store.identityEvents.listByUser(telegram.userId);
    expect(event).toMatchObject({
      kind: 'relink',
      userId: owner.userId,
      fromUserId: telegram.userId,
      toUserId: owner.userId,
      channel: 'telegram',
      accountId: telegram.accountId,
      actor: 'system',
      details: { source: 'channel', holderPhone: 'verified' },
    });
    expect(event?.createdAt).toBeInstanceOf(Date);
  });

  it('refuses the link under conflict: the account stays, the refusal is audited', async () => {
    const owner = await account('web');
    const phone = freshPhone();
    await store.users.setPhone(owner.userId, phone.digits, 'admin');
    const telegram = await account('telegram');

    expect(await linkPhone(store, { ...telegram, phone: phone.digits, source: 'channel' }, CONFLICT)).toEqual({ status: 'conflict' });
    expect((await userOf(telegram)).id).toBe(telegram.userId);
    expect((await userOf(telegram)).phone).toBeNull();
    expect((await userOf(owner)).phone).toBe(phone.digits);
    expect(await store.identityEvents.listByUser(telegram.userId)).toMatchObject([
      { kind: 'conflict', userId: telegram.userId, fromUserId: telegram.userId, toUserId: owner.userId },
    ]);
  });

  it('takes a merely typed number from whoever typed it when its owner verifies it (no relink), unless typed numbers are trusted', async () => {
    const squatter = await account('web');
    const phone = freshPhone();
    await linkPhone(store, { ...squatter, phone: phone.local, source: 'typed' }, RELINK);
    const victim = await account('telegram');

    expect(await linkPhone(store, { ...victim, phone: phone.digits, source: 'channel' }, RELINK)).toEqual({ status: 'set' });
    expect((await userOf(victim)).id).toBe(victim.userId);
    expect((await userOf(victim)).phone).toBe(phone.digits);
    expect((await userOf(squatter)).phone).toBeNull();
    expect((await store.identityEvents.listByUser(squatter.userId)).map((event) => event.kind)).toEqual(['phone_set', 'phone_revoked']);

    // Trusted, the typed number is the typer's: the verified account joins them.
    const typer = await account('web');
    const trusted = freshPhone();
    await linkPhone(store, { ...typer, phone: trusted.local, source: 'typed' }, RELINK);
    const later = await account('telegram');
    expect(await linkPhone(store, { ...later, phone: trusted.digits, source: 'channel' }, { ...RELINK, trustTyped: true })).toMatchObject({
      status: 'relinked',
      toUserId: typer.userId,
    });
  });

  it('confirms a typed number when the same user verifies it', async () => {
    const web = await account('web');
    const phone = freshPhone();
    await linkPhone(store, { ...web, phone: phone.local, source: 'typed' }, CONFLICT);
    expect(await linkPhone(store, { ...web, phone: phone.digits, source: 'channel' }, CONFLICT)).toEqual({ status: 'set' });
    expect((await store.users.findPhoneHolder(phone.digits))?.verified).toBe(true);
  });

  it.each([
    ['relink', RELINK],
    ['conflict', CONFLICT],
  ] as const)('leaves one owner after 20 concurrent verified attempts for one phone (%s)', async (policy, rules) => {
    const phone = freshPhone();
    const accounts = await Promise.all(Array.from({ length: 20 }, () => account('telegram')));

    const outcomes = await Promise.all(accounts.map((who) => linkPhone(store, { ...who, phone: phone.digits, source: 'channel' }, rules)));

    const holder = (await store.users.findPhoneHolder(phone.digits))!;
    const owners = await Promise.all(accounts.map(async (who) => (await userOf(who)).id));
    const events = (await Promise.all(accounts.map((who) => store.identityEvents.listByUser(who.userId)))).flat();
    const unique = [...new Map(events.map((event) => [event.id, event])).values()];
    expect(outcomes.filter((outcome) => outcome.status === 'set')).toHaveLength(1);
    expect(unique.filter((event) => event.kind === 'phone_set')).toMatchObject([{ userId: holder.user.id }]);
    if (policy === 'relink') {
      expect(outcomes.filter((outcome) => outcome.status === 'relinked')).toHaveLength(19);
      expect(new Set(owners)).toEqual(new Set([holder.user.id]));
      expect(unique.filter((event) => event.kind === 'relink' && event.toUserId === holder.user.id)).toHaveLength(19);
    } else {
      expect(outcomes.filter((outcome) => outcome.status === 'conflict')).toHaveLength(19);
      expect(owners).toEqual(accounts.map((who) => who.userId));
      expect(unique.filter((event) => event.kind === 'conflict' && event.toUserId === holder.user.id)).toHaveLength(19);
    }
    // Exactly one user holds the number.
    const holders = await Promise.all(accounts.map(async (who) => (await store.users.findById(who.userId))?.phone));
    expect(holders.filter((held) => held === phone.digits)).toHaveLength(1);
  });

  it('links through the local resolver and hands back the user the account now belongs to', async () => {
    const owner = await account('web');
    const phone = freshPhone();
    await store.users.setPhone(owner.userId, phone.digits, 'admin');
    const resolver = new LocalIdentityResolver(store, { phones: RELINK });
    const accountId = `telegram-${randomUUID()}`;

    const resolved = await resolver.resolve({ channel: 'telegram', accountId, phone: phone.digits, phoneVerified: true });
    expect(resolved.user.id).toBe(owner.userId);
    expect(resolved.phone).toMatchObject({ status: 'relinked', toUserId: owner.userId });
    expect(resolved.accounts.map((linked) => linked.channel).sort()).toEqual(['telegram', 'web']);

    const typed = await resolver.resolve({ channel: 'web', accountId: `web-${randomUUID()}`, phone: phone.local });
    expect(typed.user.id).not.toBe(owner.userId);
    expect(typed.phone).toEqual({ status: 'ignored' });
  });
});
