import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/domain/errors.js';
import type { ToolApproval } from '../../src/domain/approval.js';
import type { NewMessage, Session, User } from '../../src/domain/model.js';
import type { RecordedNewMessage, Store } from '../../src/domain/ports/store.js';
import { estimateTokens } from '../../src/domain/token-estimate.js';

/** What an adapter's test file hands the contract: a ready (migrated) store and how to dispose of it. */
export type MakeStore = () => Promise<{ store: Store; cleanup(): Promise<void> }>;

/**
 * The behaviour every `Store` adapter must show. Tests never assume an empty database: each one works on ids of
 * its own, so a back end may share one database across the whole file.
 */
export function runStoreContract(name: string, makeStore: MakeStore): void {
  describe(`${name} store contract`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await makeStore());
    });

    afterEach(async () => {
      await cleanup();
    });

    const unique = (prefix: string): string => `${prefix}-${randomUUID()}`;
    /** A phone number (E.164 digits) no other test uses. */
    const phoneOf = (): string => `38067${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;

    async function givenUser(displayName: string | null = 'Ada'): Promise<User> {
      const { user } = await store.users.resolveAccount({ channel: 'console', accountId: unique('acct'), displayName });
      return user;
    }

    async function givenSession(user?: User): Promise<Session> {
      const owner = user ?? (await givenUser());
      return store.sessions.open({ userId: owner.id, channel: 'console', conversationId: unique('conv') });
    }

    const text = (content: string, extra: Partial<NewMessage> = {}): NewMessage => ({ role: 'user', audience: 'display', content, ...extra });

    async function expectStoreError(promise: Promise<unknown>, code: string): Promise<void> {
      const error = await promise.then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).code).toBe(code);
    }

    describe('users', () => {
      it('creates a user and account on first contact and finds them afterwards', async () => {
        const accountId = unique('tg');
        const first = await store.users.resolveAccount({ channel: 'telegram', accountId, displayName: 'Grace' });
        expect(first.created).toBe(true);
        expect(first.user).toMatchObject({ displayName: 'Grace', phone: null });
        expect(first.user.createdAt).toBeInstanceOf(Date);
        expect(first.account).toMatchObject({ channel: 'telegram', accountId, userId: first.user.id });

        const again = await store.users.resolveAccount({ channel: 'telegram', accountId, displayName: 'Someone else' });
        expect(again.created).toBe(false);
        expect(again.user).toEqual(first.user);
        expect(again.account).toEqual(first.account);
        expect(await store.users.findById(first.user.id)).toEqual(first.user);
        expect(await store.users.findById(randomUUID())).toBeUndefined();
      });

      it('gives concurrent first contacts of one account the same user', async () => {
        const accountId = unique('tg');
        const results = await Promise.all(Array.from({ length: 5 }, () => store.users.resolveAccount({ channel: 'telegram', accountId })));
        expect(new Set(results.map((result) => result.user.id)).size).toBe(1);
        expect(results.filter((result) => result.created)).toHaveLength(1);
      });

      it('finds a user by phone and forgets it when cleared', async () => {
        const user = await givenUser();
        const phone = `49${Math.floor(Math.random() * 1e10)}`;
        await store.users.setPhone(user.id, phone);
        expect((await store.users.findByPhone(phone))?.id).toBe(user.id);
        await store.users.setPhone(user.id, null);
        expect(await store.users.findByPhone(phone)).toBeUndefined();
      });

      it('refuses a phone already bound to another user', async () => {
        const phone = `44${Math.floor(Math.random() * 1e10)}`;
        const first = await givenUser();
        const second = await givenUser();
        await store.users.setPhone(first.id, phone);
        await expectStoreError(store.users.setPhone(second.id, phone), 'conflict');
        // Several users without a phone are fine.
        await store.users.setPhone(second.id, null);
      });

      it('refuses to set the phone of an unknown user', async () => {
        await expectStoreError(store.users.setPhone(randomUUID(), null), 'not_found');
      });

      it('relinks a channel account to another user', async () => {
        const accountId = unique('tg');
        const { user: original } = await store.users.resolveAccount({ channel: 'telegram', accountId });
        const target = await givenUser('Target');

        const previous = await store.users.relinkAccount({ channel: 'telegram', accountId, userId: target.id });
        expect(previous).toBe(original.id);
        const resolved = await store.users.resolveAccount({ channel: 'telegram', accountId });
        expect(resolved.user.id).toBe(target.id);
        expect(resolved.created).toBe(false);
        expect((await store.users.listAccounts(target.id)).map((account) => account.accountId)).toContain(accountId);
        expect(await store.users.listAccounts(original.id)).toEqual([]);
      });

      it('binds an account it has never seen when relinking', async () => {
        const target = await givenUser();
        const accountId = unique('web');
        expect(await store.users.relinkAccount({ channel: 'web', accountId, userId: target.id })).toBeUndefined();
        expect((await store.users.resolveAccount({ channel: 'web', accountId })).user.id).toBe(target.id);
      });

      it('refuses to relink to a user that does not exist', async () => {
        const accountId = unique('tg');
        const { user } = await store.users.resolveAccount({ channel: 'telegram', accountId });
        await expectStoreError(store.users.relinkAccount({ channel: 'telegram', accountId, userId: randomUUID() }), 'not_found');
        expect((await store.users.resolveAccount({ channel: 'telegram', accountId })).user.id).toBe(user.id);
      });

      it('ensures a user under an outside id: created once, then returned unchanged', async () => {
        const id = unique('directory-user');
        const first = await store.users.ensureUser({ id, displayName: 'Ada' });
        expect(first.created).toBe(true);
        expect(first.user).toMatchObject({ id, displayName: 'Ada', phone: null });

        const again = await store.users.ensureUser({ id, displayName: 'Someone else' });
        expect(again.created).toBe(false);
        expect(again.user).toEqual(first.user);
        expect(await store.users.findById(id)).toEqual(first.user);
      });

      it('ensures one row when the same outside user arrives twice at once', async () => {
        const id = unique('directory-user');
        const results = await Promise.all(Array.from({ length: 5 }, () => store.users.ensureUser({ id })));
        expect(results.filter((result) => result.created)).toHaveLength(1);
        expect(new Set(results.map((result) => result.user.id))).toEqual(new Set([id]));
      });

      it('lists every account of a user', async () => {
        const { user } = await store.users.resolveAccount({ channel: 'telegram', accountId: unique('tg') });
        await store.users.relinkAccount({ channel: 'web', accountId: unique('web'), userId: user.id });
        const accounts = await store.users.listAccounts(user.id);
        expect(accounts.map((account) => account.channel).sort()).toEqual(['telegram', 'web']);
        expect(accounts.every((account) => account.userId === user.id && account.createdAt instanceof Date)).toBe(true);
      });
    });

    describe('attachments', () => {
      it('keeps a message’s files byte for byte with its inbox row, counts an account’s bytes and finds them only in their conversation', async () => {
        const user = await givenUser();
        const session = await store.sessions.open({ userId: user.id, channel: 'web', conversationId: unique('thread') });
        const accountId = unique('visitor');
        // Every byte value, so no driver may treat the column as text.
        const bytes = new Uint8Array(Array.from({ length: 300 }, (_, i) => i % 256));
        const ref = { id: unique('att'), kind: 'image' as const, mimeType: 'image/png', name: 'shoe.png', size: bytes.length };
        const accepted = await store.transaction(async (tx) => {
          const result = await tx.inbound.accept(
            {
              channel: 'web',
              conversationId: session.conversationId,
              accountId,
              userId: user.id,
              sessionId: session.id,
              text: '',
              attachments: [ref],
              messageId: null,
              dedupeKey: unique('run'),
              correlationId: unique('corr'),
              languageHint: null,
              displayName: null,
              conversationKind: 'direct',
            },
            { owner: 'p', leaseMs: 60_000 },
          );
          if (!result.accepted) throw new Error('not accepted');
          await tx.attachments.add({ channel: 'web', accountId, sessionId: session.id, inboundId: result.record.id }, [{ ...ref, bytes }]);
          return result.record;
        });
        expect(accepted.attachments).toEqual([ref]);
        expect((await store.inbound.listQueued(session.id))[0]?.attachments).toEqual([ref]);
        expect(await store.attachments.storedBytes('web', accountId)).toBe(300);
        expect(await store.attachments.storedBytes('web', unique('nobody'))).toBe(0);
        const [found] = await store.attachments.find([ref.id], session.id);
        expect(found).toMatchObject({ ...ref, sessionId: session.id });
        expect(Buffer.from(found!.bytes).equals(Buffer.from(bytes))).toBe(true);
        const other = await givenSession();
        expect(await store.attachments.find([ref.id], other.id)).toEqual([]);
      });
    });

    describe('sessions', () => {
      it('opens one pending session per conversation and reuses it', async () => {
        const user = await givenUser();
        const conversationId = unique('conv');
        const session = await store.sessions.open({ userId: user.id, channel: 'web', conversationId });
        expect(session).toMatchObject({
          userId: user.id,
          channel: 'web',
          conversationId,
          status: 'pending',
          title: null,
          inputTokens: 0,
          outputTokens: 0,
          cost: '0',
        });
        expect(session.createdAt).toBeInstanceOf(Date);
        expect(await store.sessions.open({ userId: user.id, channel: 'web', conversationId })).toEqual(session);
        const other = await store.sessions.open({ userId: user.id, channel: 'telegram', conversationId });
        expect(other.id).not.toBe(session.id);
        expect(await store.sessions.findById(session.id)).toEqual(session);
        expect(await store.sessions.findById(randomUUID())).toBeUndefined();
      });

      it('opens a conversation once under concurrent first messages', async () => {
        const user = await givenUser();
        const conversationId = unique('conv');
        const sessions = await Promise.all(Array.from({ length: 5 }, () => store.sessions.open({ userId: user.id, channel: 'web', conversationId })));
        expect(new Set(sessions.map((session) => session.id)).size).toBe(1);
      });

      it('updates status and title', async () => {
        const session = await givenSession();
        await store.sessions.setStatus(session.id, 'running');
        await store.sessions.setTitle(session.id, 'Booking a haircut');
        const updated = await store.sessions.findById(session.id);
        expect(updated).toMatchObject({ status: 'running', title: 'Booking a haircut' });
        expect(updated!.updatedAt.getTime()).toBeGreaterThanOrEqual(session.updatedAt.getTime());
        await expectStoreError(store.sessions.setStatus(randomUUID(), 'failed'), 'not_found');
      });

      it('sets a first title once, whichever of two first messages comes first', async () => {
        const session = await givenSession();
        const results = await Promise.all([
          store.sessions.setTitle(session.id, 'first words', { ifUntitled: true }),
          store.sessions.setTitle(session.id, 'other words', { ifUntitled: true }),
        ]);
        expect(results.filter(Boolean)).toHaveLength(1);
        const title = (await store.sessions.findById(session.id))!.title;
        expect(['first words', 'other words']).toContain(title);
        expect(await store.sessions.setTitle(session.id, 'later', { ifUntitled: true })).toBe(false);
        expect((await store.sessions.findById(session.id))!.title).toBe(title);
        // Without the option a title is replaced (an admin renaming a conversation).
        expect(await store.sessions.setTitle(session.id, 'renamed')).toBe(true);
        expect((await store.sessions.findById(session.id))!.title).toBe('renamed');
        await expectStoreError(store.sessions.setTitle(randomUUID(), 'x', { ifUntitled: true }), 'not_found');
      });

      it('ends a turn in one write: usage added and status set together', async () => {
        const session = await givenSession();
        await store.sessions.setStatus(session.id, 'running');
        await store.sessions.addUsage(session.id, { inputTokens: 10, outputTokens: 2, cost: '0.0001', currency: 'USD', status: 'completed' });
        expect(await store.sessions.findById(session.id)).toMatchObject({ status: 'completed', inputTokens: 10, outputTokens: 2, cost: '0.0001' });
        await store.sessions.addUsage(session.id, { inputTokens: 1, outputTokens: 1, cost: '0', currency: 'USD' });
        expect(await store.sessions.findById(session.id)).toMatchObject({ status: 'completed', inputTokens: 11 });
      });

      it("lists a user's sessions most recently active first, up to the limit", async () => {
        const user = await givenUser();
        const a = await givenSession(user);
        const b = await givenSession(user);
        const c = await givenSession(user);
        await new Promise((resolve) => setTimeout(resolve, 5));
        await store.sessions.setTitle(a.id, 'touched last');
        const listed = await store.sessions.listByUser(user.id);
        expect(listed.map((session) => session.id)[0]).toBe(a.id);
        expect(new Set(listed.map((session) => session.id))).toEqual(new Set([a.id, b.id, c.id]));
        expect(await store.sessions.listByUser(user.id, 2)).toHaveLength(2);
        expect(await store.sessions.listByUser(randomUUID())).toEqual([]);
      });

      it('keeps cost exact to 10 decimal places', async () => {
        const session = await givenSession();
        await store.sessions.addUsage(session.id, { inputTokens: 10, outputTokens: 5, cost: '0.1', currency: 'USD' });
        await store.sessions.addUsage(session.id, { inputTokens: 20, outputTokens: 7, cost: '0.2', currency: 'USD' });
        for (let i = 0; i < 3; i += 1) {
          await store.sessions.addUsage(session.id, { inputTokens: 0, outputTokens: 0, cost: '0.0000000001', currency: 'USD' });
        }
        const totals = await store.sessions.findById(session.id);
        expect(totals).toMatchObject({ inputTokens: 30, outputTokens: 12, cost: '0.3000000003', currency: 'USD' });

        const big = await givenSession();
        await store.sessions.addUsage(big.id, { inputTokens: 1, outputTokens: 1, cost: '1234567890.0123456789', currency: 'EUR' });
        await store.sessions.addUsage(big.id, { inputTokens: 1, outputTokens: 1, cost: '0.0000000011', currency: 'EUR' });
        expect((await store.sessions.findById(big.id))?.cost).toBe('1234567890.01234568');
      });

      it('rounds cost beyond 10 decimal places half away from zero', async () => {
        const session = await givenSession();
        await store.sessions.addUsage(session.id, { inputTokens: 0, outputTokens: 0, cost: '0.00000000005', currency: 'USD' });
        expect((await store.sessions.findById(session.id))?.cost).toBe('0.0000000001');
      });

      it('loses no usage under concurrent updates', async () => {
        const session = await givenSession();
        await Promise.all(
          Array.from({ length: 20 }, () => store.sessions.addUsage(session.id, { inputTokens: 3, outputTokens: 2, cost: '0.000015', currency: 'USD' })),
        );
        expect(await store.sessions.findById(session.id)).toMatchObject({ inputTokens: 60, outputTokens: 40, cost: '0.0003' });
      });

      it('takes the currency of the first cost and refuses another one afterwards', async () => {
        const session = await givenSession();
        await store.sessions.addUsage(session.id, { inputTokens: 1, outputTokens: 0, cost: '0', currency: 'RUB' });
        await store.sessions.addUsage(session.id, { inputTokens: 1, outputTokens: 0, cost: '1.5', currency: 'EUR' });
        expect(await store.sessions.findById(session.id)).toMatchObject({ cost: '1.5', currency: 'EUR', inputTokens: 2 });
        await expectStoreError(store.sessions.addUsage(session.id, { inputTokens: 1, outputTokens: 0, cost: '1', currency: 'USD' }), 'currency_mismatch');
        expect(await store.sessions.findById(session.id)).toMatchObject({ cost: '1.5', currency: 'EUR', inputTokens: 2 });
        await expectStoreError(store.sessions.addUsage(randomUUID(), { inputTokens: 1, outputTokens: 0, cost: '1', currency: 'USD' }), 'not_found');
      });

      it('adds the tokens of an unpriced turn whatever its currency: a zero cost changes no money', async () => {
        const session = await givenSession();
        await store.sessions.addUsage(session.id, { inputTokens: 1, outputTokens: 1, cost: '2.5', currency: 'EUR' });
        await store.sessions.addUsage(session.id, { inputTokens: 10, outputTokens: 5, cost: '0', currency: 'USD' });
        await store.messages.append(session.id, [text('unpriced reply')], { usage: { inputTokens: 100, outputTokens: 50, cost: '0', currency: 'USD' } });
        expect(await store.sessions.findById(session.id)).toMatchObject({ cost: '2.5', currency: 'EUR', inputTokens: 111, outputTokens: 56 });
      });

      it('rejects a malformed cost or token count', async () => {
        const session = await givenSession();
        await expectStoreError(store.sessions.addUsage(session.id, { inputTokens: 0, outputTokens: 0, cost: '1e-5', currency: 'USD' }), 'invalid_decimal');
        await expectStoreError(store.sessions.addUsage(session.id, { inputTokens: 0, outputTokens: 0, cost: 'NaN', currency: 'USD' }), 'invalid_decimal');
        await expectStoreError(store.sessions.addUsage(session.id, { inputTokens: 1.5, outputTokens: 0, cost: '0', currency: 'USD' }), 'invalid_usage');
      });
    });

    describe('costs', () => {
      it('keeps cached input tokens per message and in the session totals, never more than the input', async () => {
        const session = await givenSession();
        const [reply] = await store.messages.append(
          session.id,
          [text('cached', { role: 'assistant', inputTokens: 1000, cachedInputTokens: 400, outputTokens: 10, cost: '0.000156', currency: 'USD' })],
          {
            usage: { inputTokens: 1000, cachedInputTokens: 400, outputTokens: 10, cost: '0.000156', currency: 'USD' },
          },
        );
        await store.sessions.addUsage(session.id, { inputTokens: 50, cachedInputTokens: 50, outputTokens: 1, cost: '0.000004', currency: 'USD' });
        expect((await store.messages.listRecent(session.id, { limit: 1 }))[0]).toEqual(reply);
        expect(reply).toMatchObject({ inputTokens: 1000, cachedInputTokens: 400 });
        expect(await store.sessions.findById(session.id)).toMatchObject({ inputTokens: 1050, cachedInputTokens: 450, cost: '0.00016' });
        await expectStoreError(
          store.sessions.addUsage(session.id, { inputTokens: 5, cachedInputTokens: 6, outputTokens: 0, cost: '0', currency: 'USD' }),
          'invalid_usage',
        );
        await expectStoreError(
          store.messages.append(session.id, [text('x')], { usage: { inputTokens: 5, cachedInputTokens: 6, outputTokens: 0, cost: '0', currency: 'USD' } }),
          'invalid_usage',
        );
      });

      it('keeps one currency per session: a message carrying a cost in another currency is refused with its whole append', async () => {
        const session = await givenSession();
        await store.messages.append(session.id, [text('yuan', { role: 'assistant', cost: '0.71', currency: 'CNY' })], {
          usage: { inputTokens: 1, outputTokens: 1, cost: '0.71', currency: 'CNY' },
        });
        // The money may come on a message alone, without usage for the session: still the session's currency only.
        await expectStoreError(store.messages.append(session.id, [text('dollars', { role: 'assistant', cost: '0.1', currency: 'USD' })]), 'currency_mismatch');
        await expectStoreError(
          store.messages.append(session.id, [text('dollars', { role: 'assistant', cost: '0.1', currency: 'USD' })], { status: 'completed' }),
          'currency_mismatch',
        );
        // Messages and usage of one append that disagree are refused before anything is written.
        await expectStoreError(
          store.messages.append(session.id, [text('mixed', { role: 'assistant', cost: '0.1', currency: 'USD' })], {
            usage: { inputTokens: 1, outputTokens: 1, cost: '0.71', currency: 'CNY' },
          }),
          'currency_mismatch',
        );
        // Unpriced messages name any currency: they carry no money.
        await store.messages.append(session.id, [text('free', { role: 'assistant', cost: '0', currency: 'USD' })], { status: 'completed' });
        await store.messages.append(session.id, [text('more yuan', { role: 'assistant', cost: '0.5', currency: 'CNY' })]);
        expect((await store.messages.listRecent(session.id, { limit: 10 })).map((message) => message.content)).toEqual(['yuan', 'free', 'more yuan']);
        expect(await store.sessions.findById(session.id)).toMatchObject({ cost: '0.71', currency: 'CNY', status: 'completed' });
      });

      it('refuses money in another currency from concurrent appends once one of them fixed the session currency', async () => {
        const session = await givenSession();
        const usage = (currency: string) => ({ inputTokens: 1, outputTokens: 1, cost: '1', currency });
        const results = await Promise.allSettled(
          Array.from({ length: 10 }, (_, index) => store.messages.append(session.id, [text(`m${index}`)], { usage: usage(index % 2 === 0 ? 'USD' : 'CNY') })),
        );
        const stored = await store.sessions.findById(session.id);
        const accepted = results.filter((result) => result.status === 'fulfilled').length;
        expect(accepted).toBe(5);
        expect(stored).toMatchObject({ cost: '5', inputTokens: 5 });
        for (const result of results) if (result.status === 'rejected') expect((result.reason as StoreError).code).toBe('currency_mismatch');
        const messages = await store.messages.listRecent(session.id, { limit: 20 });
        expect(new Set(messages.map((message) => Number(message.content.slice(1)) % 2))).toEqual(new Set([stored!.currency === 'USD' ? 0 : 1]));
      });

      it("sums a user's daily spend exactly, per day and currency", async () => {
        const user = await givenUser();
        const other = await givenUser();
        expect(await store.spend.daily(user.id, '2026-03-01')).toEqual([]);
        await Promise.all(Array.from({ length: 10 }, () => store.spend.addDaily(user.id, '2026-03-01', '0.100001', 'CNY')));
        await store.spend.addDaily(user.id, '2026-03-01', '0.2', 'USD');
        await store.spend.addDaily(user.id, '2026-03-01', '0', 'EUR');
        await store.spend.addDaily(user.id, '2026-03-02', '3', 'CNY');
        await store.spend.addDaily(other.id, '2026-03-01', '7', 'CNY');
        expect(await store.spend.daily(user.id, '2026-03-01')).toEqual([
          { currency: 'CNY', cost: '1.00001' },
          { currency: 'USD', cost: '0.2' },
        ]);
        expect(await store.spend.daily(user.id, '2026-03-02')).toEqual([{ currency: 'CNY', cost: '3' }]);
        await expectStoreError(store.spend.addDaily(user.id, '2026-03-01', '1e-3', 'CNY'), 'invalid_decimal');
      });
    });

    describe('messages', () => {
      it('assigns consecutive seq numbers per session', async () => {
        const session = await givenSession();
        const first = await store.messages.append(session.id, [text('a'), text('b'), text('c')]);
        const second = await store.messages.append(session.id, [text('d'), text('e')]);
        expect(first.map((message) => message.seq)).toEqual([1, 2, 3]);
        expect(second.map((message) => message.seq)).toEqual([4, 5]);
        const other = await givenSession();
        expect((await store.messages.append(other.id, [text('x')]))[0]?.seq).toBe(1);
        expect(await store.messages.append(session.id, [])).toEqual([]);
      });

      it('marks planned messages that never went out as not sent, keeping their meta, and only in their own session', async () => {
        const session = await givenSession();
        const [kept, dropped] = await store.messages.append(session.id, [text('sent'), { ...text('not sent'), meta: { replyPart: 1 } }]);
        const other = await givenSession();
        const [foreign] = await store.messages.append(other.id, [text('elsewhere')]);
        await store.messages.markNotSent(session.id, [dropped!.id, foreign!.id], 'interrupted');
        await store.messages.markNotSent(session.id, [], 'interrupted');
        const after = await store.messages.listRecent(session.id, { limit: 10 });
        expect(after.map((message) => [message.id, message.meta])).toEqual([
          [kept!.id, kept!.meta],
          [dropped!.id, { replyPart: 1, notSent: 'interrupted' }],
        ]);
        expect((await store.messages.listRecent(other.id, { limit: 10 }))[0]!.meta).toEqual(foreign!.meta);
      });

      it('changes the session in the same write: status, and usage added to its totals', async () => {
        const session = await givenSession();
        const [accepted] = await store.messages.append(session.id, [text('hello')], { status: 'running' });
        expect(accepted?.seq).toBe(1);
        expect(await store.sessions.findById(session.id)).toMatchObject({ status: 'running', inputTokens: 0, cost: '0' });
        const usage = { inputTokens: 120, outputTokens: 30, cost: '0.00015', currency: 'EUR' };
        const reply = await store.messages.append(session.id, [text('one'), text('two')], { status: 'completed', usage });
        expect(reply.map((message) => message.seq)).toEqual([2, 3]);
        await store.messages.append(session.id, [text('three')], { usage });
        expect(await store.sessions.findById(session.id)).toMatchObject({
          status: 'completed',
          inputTokens: 240,
          outputTokens: 60,
          cost: '0.0003',
          currency: 'EUR',
        });
        // A status alone, without messages, is a session write too.
        expect(await store.messages.append(session.id, [], { status: 'failed' })).toEqual([]);
        expect((await store.sessions.findById(session.id))?.status).toBe('failed');
      });

      it('appends nothing when the session change is refused', async () => {
        const session = await givenSession();
        await store.messages.append(session.id, [text('paid')], { usage: { inputTokens: 1, outputTokens: 1, cost: '0.5', currency: 'EUR' } });
        await expectStoreError(
          store.messages.append(session.id, [text('other money')], { usage: { inputTokens: 1, outputTokens: 1, cost: '0.5', currency: 'USD' } }),
          'currency_mismatch',
        );
        await expectStoreError(
          store.messages.append(session.id, [text('bad')], { usage: { inputTokens: -1, outputTokens: 1, cost: '0', currency: 'EUR' } }),
          'invalid_usage',
        );
        expect((await store.messages.listRecent(session.id, { limit: 10 })).map((message) => message.content)).toEqual(['paid']);
        expect(await store.sessions.findById(session.id)).toMatchObject({ cost: '0.5', inputTokens: 1 });
        await expectStoreError(store.messages.append(unique('no-session'), [text('x')], { status: 'running' }), 'not_found');
      });

      it('round-trips every message field', async () => {
        const session = await givenSession();
        const [stored] = await store.messages.append(session.id, [
          {
            role: 'assistant',
            audience: 'audit',
            content: 'Checking the calendar… ✂️',
            toolCalls: [{ callId: 'call_1', name: 'calendar.find', arguments: '{"day":"2025-01-02"}' }],
            model: 'gpt-test',
            inputTokens: 120,
            outputTokens: 30,
            cost: '0.00015000',
            currency: 'EUR',
            correlationId: 'corr-1',
            meta: { fallback: true, nested: { n: 1 } },
          },
          { role: 'tool', audience: 'audit', content: '{"slots":[]}', toolCallId: 'call_1' },
        ]);
        expect(stored).toMatchObject({ sessionId: session.id, seq: 1, cost: '0.00015' });
        const listed = await store.messages.listRecent(session.id, { limit: 10 });
        expect(listed[0]).toEqual(stored);
        expect(listed[0]).toMatchObject({
          role: 'assistant',
          audience: 'audit',
          content: 'Checking the calendar… ✂️',
          toolCalls: [{ callId: 'call_1', name: 'calendar.find', arguments: '{"day":"2025-01-02"}' }],
          toolCallId: null,
          model: 'gpt-test',
          inputTokens: 120,
          outputTokens: 30,
          currency: 'EUR',
          correlationId: 'corr-1',
          meta: { fallback: true, nested: { n: 1 } },
        });
        expect(listed[0]?.createdAt).toBeInstanceOf(Date);
        expect(listed[1]).toMatchObject({
          role: 'tool',
          toolCallId: 'call_1',
          toolCalls: null,
          model: null,
          meta: null,
          cost: '0',
          inputTokens: 0,
          correlationId: null,
        });
      });

      it('lists recent messages oldest first, filtered by audience', async () => {
        const session = await givenSession();
        await store.messages.append(
          session.id,
          Array.from({ length: 10 }, (_, i) => text(`m${i + 1}`, { audience: i % 2 === 0 ? 'display' : 'audit' })),
        );
        expect((await store.messages.listRecent(session.id, { limit: 3 })).map((m) => m.content)).toEqual(['m8', 'm9', 'm10']);
        expect((await store.messages.listRecent(session.id, { limit: 2, audience: 'display' })).map((m) => m.content)).toEqual(['m7', 'm9']);
        expect((await store.messages.listRecent(session.id, { limit: 100, audience: 'audit' })).map((m) => m.seq)).toEqual([2, 4, 6, 8, 10]);
        expect(await store.messages.listRecent(session.id, { limit: 0 })).toEqual([]);
        expect(await store.messages.listRecent(randomUUID(), { limit: 5 })).toEqual([]);
      });

      it("estimates each message's tokens once, when it is stored, and hands the estimate back when listed", async () => {
        const session = await givenSession();
        const english = 'Could you move my haircut to Friday at five?';
        const chinese = '请把我的理发改到星期五下午五点。';
        const stored = await store.messages.append(session.id, [
          text(english),
          text(chinese, { role: 'assistant' }),
          text('', {
            role: 'assistant',
            audience: 'audit',
            toolCalls: [{ callId: 'call_1', name: 'reschedule', arguments: '{"id":7,"at":"2025-01-03T17:00"}' }],
          }),
        ]);
        expect(stored.map((message) => message.tokenEstimate)).toEqual([
          estimateTokens(english),
          estimateTokens(chinese),
          estimateTokens('', JSON.stringify(stored[2]!.toolCalls)),
        ]);
        // About a token per Chinese character, about four English characters per token, plus the message's framing.
        expect(stored[0]!.tokenEstimate).toBe(4 + Math.ceil(english.length / 4));
        expect(stored[1]!.tokenEstimate).toBe(4 + chinese.length);
        expect(stored[2]!.tokenEstimate).toBeGreaterThan(4 + 10);
        expect((await store.messages.listRecent(session.id, { limit: 10 })).map((message) => message.tokenEstimate)).toEqual(
          stored.map((message) => message.tokenEstimate),
        );
      });

      it('concurrent appends to one session get distinct seqs', async () => {
        const session = await givenSession();
        const batches = await Promise.all(
          Array.from({ length: 10 }, (_, batch) => store.messages.append(session.id, [text(`${batch}.1`), text(`${batch}.2`)])),
        );
        for (const batch of batches) {
          expect(batch[1]!.seq).toBe(batch[0]!.seq + 1);
        }
        const seqs = batches
          .flat()
          .map((message) => message.seq)
          .sort((a, b) => a - b);
        expect(seqs).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
        const listed = await store.messages.listRecent(session.id, { limit: 100 });
        expect(listed.map((message) => message.seq)).toEqual(seqs);
      });

      it("clears a session's history without reusing seqs", async () => {
        const session = await givenSession();
        await store.messages.append(session.id, [text('a'), text('b')]);
        const other = await givenSession();
        await store.messages.append(other.id, [text('kept')]);
        expect(await store.messages.clear(session.id)).toBe(2);
        expect(await store.messages.listRecent(session.id, { limit: 10 })).toEqual([]);
        expect((await store.messages.append(session.id, [text('c')]))[0]?.seq).toBe(3);
        expect(await store.messages.listRecent(other.id, { limit: 10 })).toHaveLength(1);
        expect(await store.messages.clear(randomUUID())).toBe(0);
      });

      it('refuses to append to an unknown session', async () => {
        await expectStoreError(store.messages.append(randomUUID(), [text('lost')]), 'not_found');
      });

      it('appends a batch larger than one insert statement', async () => {
        const session = await givenSession();
        const stored = await store.messages.append(
          session.id,
          Array.from({ length: 1203 }, (_, i) => text(`m${i}`)),
        );
        expect(stored.map((message) => message.seq)).toEqual(Array.from({ length: 1203 }, (_, i) => i + 1));
        const last = await store.messages.listRecent(session.id, { limit: 1 });
        expect(last[0]).toMatchObject({ seq: 1203, content: 'm1202' });
      });
    });

    describe('user state', () => {
      it('saves versioned state and reads it back', async () => {
        const user = await givenUser();
        expect(await store.userState.get(user.id)).toBeUndefined();
        expect(await store.userState.save(user.id, { step: 1 })).toBe(1);
        expect(await store.userState.save(user.id, { step: 2, list: ['a'] })).toBe(2);
        const record = await store.userState.get(user.id);
        expect(record).toMatchObject({ userId: user.id, version: 2 });
        expect(JSON.parse(record!.raw)).toEqual({ step: 2, list: ['a'] });
        expect(record!.updatedAt).toBeInstanceOf(Date);
      });

      it('refuses a save with a stale expected version', async () => {
        const user = await givenUser();
        expect(await store.userState.save(user.id, { a: 1 }, 0)).toBe(1);
        expect(await store.userState.save(user.id, { a: 2 }, 0)).toBe(false);
        expect(await store.userState.save(user.id, { a: 2 }, 1)).toBe(2);
        expect(await store.userState.save(user.id, { a: 3 }, 1)).toBe(false);
        expect(JSON.parse((await store.userState.get(user.id))!.raw)).toEqual({ a: 2 });
        const stranger = await givenUser();
        expect(await store.userState.save(stranger.id, { a: 1 }, 4)).toBe(false);
      });

      it('lets exactly one of two concurrent saves of the same version win', async () => {
        const user = await givenUser();
        await store.userState.save(user.id, { n: 0 });
        const results = await Promise.all([store.userState.save(user.id, { n: 1 }, 1), store.userState.save(user.id, { n: 2 }, 1)]);
        expect(results.filter((result) => result === false)).toHaveLength(1);
        expect(results).toContain(2);
      });

      it('hands back the stored text as it is, unparsed', async () => {
        const user = await givenUser();
        await store.userState.save(user.id, { ok: true, list: [1, 'two'] });
        expect(await store.userState.get(user.id)).toMatchObject({ raw: '{"ok":true,"list":[1,"two"]}', version: 1 });
      });

      it('refuses state that has no JSON form', async () => {
        const user = await givenUser();
        await expectStoreError(store.userState.save(user.id, undefined), 'invalid_state');
      });
    });

    describe('profiles', () => {
      it("saves and replaces a user's settings text as it is, apart from other users'", async () => {
        const user = await givenUser();
        const other = await givenUser();
        expect(await store.profiles.get(user.id)).toBeUndefined();
        await store.profiles.save(user.id, '{"version":1,"preferences":{"aiLanguage":"uk"}}');
        await store.profiles.save(other.id, '{"version":1}');
        const saved = await store.profiles.get(user.id);
        expect(saved).toEqual({ raw: '{"version":1,"preferences":{"aiLanguage":"uk"}}', updatedAt: expect.any(Date) });

        await store.profiles.save(user.id, 'not json: the store keeps text, the schema judges it');
        expect((await store.profiles.get(user.id))!.raw).toBe('not json: the store keeps text, the schema judges it');
        expect((await store.profiles.get(other.id))!.raw).toBe('{"version":1}');
      });

      it('seeds a profile only once: a second seed leaves the first (or an update) in place', async () => {
        const user = await givenUser();
        expect(await store.profiles.saveIfAbsent(user.id, '{"seed":1}')).toBe(true);
        expect(await store.profiles.saveIfAbsent(user.id, '{"seed":2}')).toBe(false);
        expect((await store.profiles.get(user.id))!.raw).toBe('{"seed":1}');
        await store.profiles.save(user.id, '{"updated":true}');
        expect(await store.profiles.saveIfAbsent(user.id, '{"seed":3}')).toBe(false);
        expect((await store.profiles.get(user.id))!.raw).toBe('{"updated":true}');
      });

      it('lets exactly one of concurrent seeds win', async () => {
        const user = await givenUser();
        const results = await Promise.all([1, 2, 3, 4].map((n) => store.profiles.saveIfAbsent(user.id, `{"seed":${n}}`)));
        expect(results.filter(Boolean)).toHaveLength(1);
      });

      it('refuses a profile for a user that does not exist', async () => {
        await expectStoreError(store.profiles.save(randomUUID(), '{}'), 'foreign_key');
        await expectStoreError(store.profiles.saveIfAbsent(randomUUID(), '{}'), 'foreign_key');
      });
    });

    describe('phones and relinks', () => {
      it('remembers where a phone came from: a typed one is a claim, the others vouched for', async () => {
        const typed = await givenUser();
        const vouched = await givenUser();
        const [claim, verified] = [phoneOf(), phoneOf()];
        await store.users.setPhone(typed.id, claim, 'typed');
        await store.users.setPhone(vouched.id, verified, 'channel');
        expect(await store.users.findPhoneHolder(claim)).toMatchObject({ user: { id: typed.id, phone: claim }, verified: false });
        expect(await store.users.findPhoneHolder(verified)).toMatchObject({ user: { id: vouched.id }, verified: true });
        expect(await store.users.findPhoneHolder(phoneOf())).toBeUndefined();
        // Set again through a path that vouches for it, the claim becomes verified.
        await store.users.setPhone(typed.id, claim);
        expect((await store.users.findPhoneHolder(claim))?.verified).toBe(true);
      });

      it("carries along with a relink the account's own sessions on the channels of its namespace, and only those", async () => {
        const accountId = unique('tg');
        const otherAccount = unique('tg');
        const { user: previous } = await store.users.resolveAccount({ channel: 'telegram', accountId });
        await store.users.relinkAccount({ channel: 'telegram', accountId: otherAccount, userId: previous.id });
        const target = await givenUser('Target');
        const session = (channel: string) => store.sessions.open({ userId: previous.id, channel, conversationId: unique('chat') });
        const wrote = (on: Session, from: string, userId = previous.id) =>
          store.inbound.accept(
            {
              channel: on.channel,
              conversationId: on.conversationId,
              accountId: from,
              userId,
              sessionId: on.id,
              text: 'hi',
              messageId: null,
              dedupeKey: null,
              correlationId: unique('corr'),
              languageHint: null,
              displayName: null,
              conversationKind: 'direct',
            },
            { owner: 'p', leaseMs: 60_000 },
          );
        const own = await session('telegram');
        await wrote(own, accountId);
        const ofTheOtherAccount = await session('telegram');
        await wrote(ofTheOtherAccount, otherAccount);
        const sharedWithTheOtherAccount = await session('telegram');
        await wrote(sharedWithTheOtherAccount, accountId);
        await wrote(sharedWithTheOtherAccount, otherAccount);
        const group = await session('telegram');
        await wrote(group, accountId);
        await wrote(group, unique('tg'), target.id);
        const unwritten = await session('telegram');
        const elsewhere = await session('web');
        await wrote(elsewhere, accountId);
        // Another channel of the account's namespace: the account wrote there too.
        const sameNamespace = await session('telegram-user');
        await store.inbound.accept(
          {
            channel: 'telegram-user',
            accountNamespace: 'telegram',
            conversationId: sameNamespace.conversationId,
            accountId,
            userId: previous.id,
            sessionId: sameNamespace.id,
            text: 'hi',
            messageId: null,
            dedupeKey: null,
            correlationId: unique('corr'),
            languageHint: null,
            displayName: null,
            conversationKind: 'direct',
          },
          { owner: 'p', leaseMs: 60_000 },
        );
        // A conversation that holds only messages recorded without a turn, the account its person.
        const recordedOnly = await session('telegram-user');
        await store.recorded.append(
          {
            channel: 'telegram-user',
            conversationId: recordedOnly.conversationId,
            sessionId: recordedOnly.id,
            accountNamespace: 'telegram',
            accountId,
            userId: previous.id,
          },
          [{ role: 'user', audience: 'display', content: 'imported', channelMessageId: '1' }],
        );

        expect(await store.users.relinkAccount({ channel: 'telegram', accountId, userId: target.id, carrySessions: true })).toBe(previous.id);
        const ownerOf = async (moved: Session) => (await store.sessions.findById(moved.id))?.userId;
        expect(await ownerOf(own)).toBe(target.id);
        // Other people's words in a group are no secret of the previous user's: the group moves.
        expect(await ownerOf(group)).toBe(target.id);
        expect(await ownerOf(sameNamespace)).toBe(target.id);
        expect(await ownerOf(recordedOnly)).toBe(target.id);
        for (const kept of [ofTheOtherAccount, sharedWithTheOtherAccount, unwritten, elsewhere]) expect(await ownerOf(kept)).toBe(previous.id);
      });
    });

    describe('identity events', () => {
      it('records events and lists those naming a user, as subject or either side of a relink, oldest first', async () => {
        const from = await givenUser();
        const to = await givenUser();
        const bystander = await givenUser();
        const set = await store.identityEvents.add({
          userId: from.id,
          kind: 'phone_set',
          channel: 'web',
          accountId: 'w-1',
          actor: 'system',
          details: { source: 'typed' },
        });
        const relink = await store.identityEvents.add({
          userId: to.id,
          kind: 'relink',
          channel: 'telegram',
          accountId: 't-1',
          fromUserId: from.id,
          toUserId: to.id,
          actor: 'system',
          details: { source: 'channel' },
        });
        await store.identityEvents.add({ userId: bystander.id, kind: 'conflict', actor: 'system' });

        expect(set).toMatchObject({
          userId: from.id,
          kind: 'phone_set',
          channel: 'web',
          accountId: 'w-1',
          fromUserId: null,
          toUserId: null,
          actor: 'system',
          details: { source: 'typed' },
        });
        expect(set.createdAt).toBeInstanceOf(Date);
        const ofFrom = await store.identityEvents.listByUser(from.id);
        expect(ofFrom.map((event) => event.kind).sort()).toEqual(['phone_set', 'relink']);
        expect(ofFrom.find((event) => event.kind === 'relink')).toEqual(relink);
        expect((await store.identityEvents.listByUser(to.id)).map((event) => event.id)).toEqual([relink.id]);
        expect(await store.identityEvents.listByUser(bystander.id)).toMatchObject([{ kind: 'conflict', details: {}, channel: null }]);
        expect(await store.identityEvents.listByUser(randomUUID())).toEqual([]);
      });

      it('lists events in the order they were written, also within one millisecond, the latest up to the limit', async () => {
        const user = await givenUser();
        // Written back to back (as the events of one phone link are), most share a millisecond.
        for (let index = 0; index < 8; index += 1)
          await store.identityEvents.add({ userId: user.id, kind: 'admin_change', actor: 'admin', details: { index } });
        expect((await store.identityEvents.listByUser(user.id)).map((event) => event.details['index'])).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
        expect((await store.identityEvents.listByUser(user.id, 2)).map((event) => event.details['index'])).toEqual([6, 7]);
      });

      it('writes an event with the change it records, or not at all', async () => {
        const user = await givenUser();
        const phone = phoneOf();
        await expect(
          store.transaction(async (tx) => {
            await tx.users.setPhone(user.id, phone, 'channel');
            await tx.identityEvents.add({ userId: user.id, kind: 'phone_set', actor: 'system' });
            throw new Error('rolled back');
          }),
        ).rejects.toThrow('rolled back');
        expect(await store.identityEvents.listByUser(user.id)).toEqual([]);
        expect((await store.users.findById(user.id))?.phone).toBeNull();
      });
    });

    describe('focus', () => {
      const ownerOf = (session: Session) => ({ sessionId: session.id, userId: session.userId });

      it('saves, replaces and clears the entities in focus per session, person and type', async () => {
        const session = await givenSession();
        const other = await givenSession();
        const mine = ownerOf(session);
        expect(await store.focus.get(mine, 'appointment')).toBeUndefined();
        await store.focus.save(mine, { entityType: 'appointment', entities: [{ id: 7, description: 'Haircut, 1 Dec 10:00' }], loadedAt: 1_700_000_000_000 });
        await store.focus.save(ownerOf(other), { entityType: 'appointment', entities: [], loadedAt: 5 });
        expect(await store.focus.get(mine, 'appointment')).toEqual({
          entityType: 'appointment',
          entities: [{ id: 7, description: 'Haircut, 1 Dec 10:00' }],
          loadedAt: 1_700_000_000_000,
        });

        await store.focus.save(mine, { entityType: 'appointment', entities: [{ id: 'b-2', description: 'Manicure' }], loadedAt: 1_700_000_000_001 });
        expect(await store.focus.get(mine, 'appointment')).toMatchObject({ entities: [{ id: 'b-2' }], loadedAt: 1_700_000_000_001 });
        expect(await store.focus.get(mine, 'master')).toBeUndefined();

        await store.focus.clear(mine, 'appointment');
        expect(await store.focus.get(mine, 'appointment')).toBeUndefined();
        expect(await store.focus.get(ownerOf(other), 'appointment')).toEqual({ entityType: 'appointment', entities: [], loadedAt: 5 });
      });

      it('keeps each member of a group conversation their own focus: saving, reading and clearing one leaves the other', async () => {
        const group = await givenSession();
        const member = await givenUser('Ben');
        const first = ownerOf(group);
        const second = { sessionId: group.id, userId: member.id };
        await store.focus.save(first, { entityType: 'appointment', entities: [{ id: 42, description: 'Haircut' }], loadedAt: 1 });
        expect(await store.focus.get(second, 'appointment')).toBeUndefined();

        await store.focus.save(second, { entityType: 'appointment', entities: [{ id: 7, description: 'Beard trim' }], loadedAt: 2 });
        expect(await store.focus.get(first, 'appointment')).toMatchObject({ entities: [{ id: 42 }] });
        expect(await store.focus.get(second, 'appointment')).toMatchObject({ entities: [{ id: 7 }] });

        await store.focus.clear(second, 'appointment');
        expect(await store.focus.get(second, 'appointment')).toBeUndefined();
        expect(await store.focus.get(first, 'appointment')).toMatchObject({ entities: [{ id: 42 }] });
      });

      it('refuses focus for a session or a person that does not exist', async () => {
        const session = await givenSession();
        await expectStoreError(
          store.focus.save({ sessionId: randomUUID(), userId: session.userId }, { entityType: 'appointment', entities: [], loadedAt: 1 }),
          'foreign_key',
        );
        await expectStoreError(
          store.focus.save({ sessionId: session.id, userId: randomUUID() }, { entityType: 'appointment', entities: [], loadedAt: 1 }),
          'foreign_key',
        );
      });
    });

    describe('tool calls', () => {
      async function givenCall(session: Session, callId = unique('call')) {
        return { callId, sessionId: session.id, userId: session.userId, correlationId: 'corr-1', name: 'calendar.book', arguments: '{"slot":3}' };
      }

      it('refuses a second start of the same tool call id', async () => {
        const session = await givenSession();
        const call = await givenCall(session);
        expect(await store.toolCalls.start(call)).toBe(true);
        expect(await store.toolCalls.start({ ...call, arguments: '{"slot":4}' })).toBe(false);
        expect(await store.toolCalls.findByCallId(call.callId)).toMatchObject({ ...call, status: 'running', result: null, finishedAt: null });
      });

      it('records the outcome once', async () => {
        const session = await givenSession();
        const call = await givenCall(session);
        await store.toolCalls.start(call);
        await store.toolCalls.finish(call.callId, { status: 'succeeded', result: '{"booked":true}' });
        await store.toolCalls.finish(call.callId, { status: 'failed', result: 'late duplicate' });
        const record = await store.toolCalls.findByCallId(call.callId);
        expect(record).toMatchObject({ status: 'succeeded', result: '{"booked":true}' });
        expect(record!.finishedAt).toBeInstanceOf(Date);
        await expectStoreError(store.toolCalls.finish(unique('never'), { status: 'failed', result: 'x' }), 'not_found');
      });

      it('records a call with its outcome at once, and gives a call already recorded only the outcome, once', async () => {
        const session = await givenSession();
        const call = await givenCall(session);
        await store.toolCalls.record(call, { status: 'succeeded', result: '{"slots":[3]}' });
        const record = await store.toolCalls.findByCallId(call.callId);
        expect(record).toMatchObject({ ...call, status: 'succeeded', result: '{"slots":[3]}' });
        expect(record!.finishedAt).toBeInstanceOf(Date);
        await store.toolCalls.record({ ...call, arguments: '{"slot":4}' }, { status: 'failed', result: 'late duplicate' });
        expect(await store.toolCalls.findByCallId(call.callId)).toMatchObject({ arguments: call.arguments, status: 'succeeded', result: '{"slots":[3]}' });

        const started = await givenCall(session);
        await store.toolCalls.start(started);
        await store.toolCalls.record({ ...started, arguments: '{"slot":5}' }, { status: 'failed', result: 'no slot' });
        expect(await store.toolCalls.findByCallId(started.callId)).toMatchObject({ arguments: started.arguments, status: 'failed', result: 'no slot' });
      });

      it("lists a session's tool calls", async () => {
        const session = await givenSession();
        const a = await givenCall(session);
        await store.toolCalls.start(a);
        await new Promise((resolve) => setTimeout(resolve, 3));
        const b = await givenCall(session);
        await store.toolCalls.start(b);
        expect((await store.toolCalls.listBySession(session.id)).map((call) => call.callId)).toEqual([a.callId, b.callId]);
        expect(await store.toolCalls.findByCallId(unique('none'))).toBeUndefined();
      });

      it('lets exactly one of concurrent starts of one call id through', async () => {
        const session = await givenSession();
        const call = await givenCall(session);
        const results = await Promise.all(Array.from({ length: 5 }, () => store.toolCalls.start(call)));
        expect(results.filter(Boolean)).toHaveLength(1);
      });
    });

    describe('tool outbox', () => {
      const entry = (channel: string, callKey = unique('turn') + ':call-1', attempt = 1) => ({
        callKey,
        responseChannel: channel,
        payload: `{"attempt":${attempt}}`,
        attempt,
        deadline: Date.now() + 60_000,
      });

      it('keeps a call due until its attempt is published; a new attempt is due again and a stale stamp does not hide it', async () => {
        const channel = unique('rpc');
        const first = entry(channel);
        await store.toolOutbox.put(first);
        expect(await store.toolOutbox.list(channel, { dueOnly: true, limit: 10 })).toEqual([{ ...first, publishedAt: null, createdAt: expect.any(Number) }]);
        await store.toolOutbox.markPublished(first.callKey, 1);
        expect(await store.toolOutbox.list(channel, { dueOnly: true, limit: 10 })).toEqual([]);
        const waiting = await store.toolOutbox.list(channel, { dueOnly: false, limit: 10 });
        expect(waiting).toHaveLength(1);
        expect(waiting[0]!.publishedAt).toEqual(expect.any(Number));

        await store.toolOutbox.put(entry(channel, first.callKey, 2));
        await store.toolOutbox.markPublished(first.callKey, 1);
        expect(await store.toolOutbox.list(channel, { dueOnly: true, limit: 10 })).toMatchObject([
          { callKey: first.callKey, attempt: 2, payload: '{"attempt":2}', publishedAt: null },
        ]);
        expect(await store.toolOutbox.list(unique('rpc'), { dueOnly: false, limit: 10 })).toEqual([]);
      });

      it('lists oldest first up to the limit, and forgets answered and expired calls', async () => {
        const channel = unique('rpc');
        const calls = [entry(channel), entry(channel), entry(channel)];
        for (const call of calls) {
          await store.toolOutbox.put(call);
          await new Promise((resolve) => setTimeout(resolve, 3));
        }
        expect((await store.toolOutbox.list(channel, { dueOnly: true, limit: 2 })).map((row) => row.callKey)).toEqual([calls[0]!.callKey, calls[1]!.callKey]);
        await store.toolOutbox.remove(calls[0]!.callKey);
        await store.toolOutbox.put({ ...entry(channel), deadline: 1 });
        expect(await store.toolOutbox.removeExpired(2)).toBeGreaterThanOrEqual(1);
        expect((await store.toolOutbox.list(channel, { dueOnly: false, limit: 10 })).map((row) => row.callKey)).toEqual([calls[1]!.callKey, calls[2]!.callKey]);
        await store.toolOutbox.remove(calls[1]!.callKey, calls[2]!.callKey, unique('never-written'));
        expect(await store.toolOutbox.list(channel, { dueOnly: false, limit: 10 })).toEqual([]);
        await store.toolOutbox.remove();
      });

      it('writes a call record and its outbox entry together or not at all', async () => {
        const session = await givenSession();
        const channel = unique('rpc');
        const callKey = unique('turn') + ':call-1';
        const record = { callId: callKey, sessionId: session.id, userId: session.userId, correlationId: 'corr-1', name: 'calendar.book', arguments: '{}' };
        await expect(
          store.transaction(async (tx) => {
            await tx.toolCalls.start(record);
            await tx.toolOutbox.put(entry(channel, callKey));
            throw new Error('crash before commit');
          }),
        ).rejects.toThrow('crash before commit');
        expect(await store.toolCalls.findByCallId(callKey)).toBeUndefined();
        expect(await store.toolOutbox.list(channel, { dueOnly: false, limit: 10 })).toEqual([]);
        await store.transaction(async (tx) => {
          await tx.toolCalls.start(record);
          await tx.toolOutbox.put(entry(channel, callKey));
        });
        expect(await store.toolCalls.findByCallId(callKey)).toMatchObject({ status: 'running' });
        expect(await store.toolOutbox.list(channel, { dueOnly: true, limit: 10 })).toHaveLength(1);
      });
    });

    describe('durable inbox', () => {
      async function givenInbound(
        session: Session,
        extra: { channel?: string; dedupeKey?: string | null; owner?: string; leaseMs?: number; text?: string } = {},
      ) {
        return store.inbound.accept(
          {
            channel: extra.channel ?? 'console',
            conversationId: session.conversationId,
            accountId: 'acct',
            userId: session.userId,
            sessionId: session.id,
            text: extra.text ?? 'hello',
            messageId: unique('msg'),
            dedupeKey: extra.dedupeKey === undefined ? null : extra.dedupeKey,
            correlationId: unique('corr'),
            languageHint: 'en',
            displayName: null,
            conversationKind: 'direct',
          },
          { owner: extra.owner ?? 'process-a', leaseMs: extra.leaseMs ?? 60_000 },
        );
      }

      it('keeps an accepted message queued until it is answered, then points at the reply', async () => {
        const session = await givenSession();
        const accepted = await givenInbound(session, { text: 'first' });
        expect(accepted).toMatchObject({ accepted: true, record: { state: 'queued', text: 'first', replySeq: null } });
        expect((await store.inbound.listQueued(session.id)).map((record) => record.text)).toEqual(['first']);
        const [reply] = await store.messages.append(session.id, [text('first'), text('answer', { role: 'assistant' })]).then((stored) => stored.slice(-1));
        expect(await store.inbound.markAnswered([accepted.accepted ? accepted.record.id : ''], { id: reply!.id, seq: reply!.seq })).toBe(1);
        expect(await store.inbound.listQueued(session.id)).toEqual([]);
        expect((await store.messages.findBySeq(session.id, reply!.seq))?.content).toBe('answer');
        // A second turn (another process's, whose lease had lapsed) does not answer it again.
        expect(await store.inbound.markAnswered([accepted.accepted ? accepted.record.id : ''], { id: 'other-reply', seq: reply!.seq + 1 })).toBe(0);
      });

      it('refuses a redelivered key in the same conversation, handing back the first record, and accepts it elsewhere', async () => {
        const session = await givenSession();
        const key = unique('run');
        const first = await givenInbound(session, { dedupeKey: key });
        const again = await givenInbound(session, { dedupeKey: key });
        expect(first.accepted).toBe(true);
        expect(again).toMatchObject({ accepted: false, existing: { id: first.accepted ? first.record.id : 'x', dedupeKey: key } });
        // The same key on another conversation, or messages without a key, are new messages.
        expect((await givenInbound(await givenSession(), { dedupeKey: key })).accepted).toBe(true);
        expect((await givenInbound(session)).accepted).toBe(true);
        expect((await givenInbound(session)).accepted).toBe(true);
      });

      it('lets exactly one of concurrent deliveries of a key through', async () => {
        const session = await givenSession();
        const key = unique('update');
        const results = await Promise.all(Array.from({ length: 5 }, () => givenInbound(session, { dedupeKey: key })));
        expect(results.filter((result) => result.accepted)).toHaveLength(1);
      });

      it('hands expired messages of the given channels to one new owner, oldest first, and leaves live leases alone', async () => {
        const channel = unique('chan');
        const session = await givenSession();
        await givenInbound(session, { channel, owner: 'dead', leaseMs: 1, text: 'm1' });
        await givenInbound(session, { channel, owner: 'dead', leaseMs: 1, text: 'm2' });
        await givenInbound(session, { channel, owner: 'alive', leaseMs: 60_000, text: 'm3' });
        await givenInbound(session, { channel: unique('other'), owner: 'dead', leaseMs: 1, text: 'elsewhere' });
        await new Promise((resolve) => setTimeout(resolve, 5)); // the 1 ms leases run out
        const [b, c] = await Promise.all([
          store.inbound.claimExpired({ owner: 'b', leaseMs: 60_000, channels: [channel], limit: 10 }),
          store.inbound.claimExpired({ owner: 'c', leaseMs: 60_000, channels: [channel], limit: 10 }),
        ]);
        const claimed = [...b, ...c].map((record) => record.text).sort();
        expect(claimed).toEqual(['m1', 'm2']);
        expect((b.length > 0 ? b : c).map((record) => record.text)).toEqual(['m1', 'm2']);
        // Taken over: nobody else gets them while the new lease lives.
        expect(await store.inbound.claimExpired({ owner: 'd', leaseMs: 60_000, channels: [channel], limit: 10 })).toEqual([]);
      });

      it("counts the turns that take a message, and recovery waits for a failed one's retry time", async () => {
        const channel = unique('chan');
        const session = await givenSession();
        const later = await givenInbound(session, { channel, owner: 'dead', leaseMs: 1, text: 'later' });
        const soon = await givenInbound(session, { channel, owner: 'dead', leaseMs: 1, text: 'soon' });
        const fresh = await givenInbound(session, { channel, owner: 'dead', leaseMs: 1, text: 'fresh' });
        expect(later).toMatchObject({ accepted: true, record: { attempts: 1 } });
        const id = (accepted: typeof later) => (accepted.accepted ? accepted.record.id : '');
        // Their turns failed: the next attempt is counted now, and taken only after the wait.
        await store.inbound.retryLater([id(later)], 60_000);
        await store.inbound.retryLater([id(soon)], 1);
        await new Promise((resolve) => setTimeout(resolve, 5)); // the 1 ms leases and the 1 ms wait run out
        const claimed = await store.inbound.claimExpired({ owner: 'heir', leaseMs: 60_000, channels: [channel], limit: 10 });
        // `soon`'s second attempt was counted by its failed turn; `fresh` never began a turn, so its takeover is free.
        expect(claimed.map((record) => [record.text, record.attempts])).toEqual([
          ['soon', 2],
          ['fresh', 1],
        ]);
        await store.inbound.markAbandoned([id(fresh)]);
        expect((await store.inbound.listQueued(session.id)).map((record) => [record.text, record.attempts])).toEqual([
          ['later', 2],
          ['soon', 2],
        ]);
      });

      it('drops queued messages of one owner whose client left, and takes one back that is sent again', async () => {
        const channel = unique('chan');
        const session = await givenSession();
        await store.sessions.setStatus(session.id, 'running');
        const left = await givenInbound(session, { channel, owner: 'web-1', dedupeKey: 'run-left', text: 'left' });
        const elsewhere = await givenInbound(session, { channel, owner: 'web-2', text: 'elsewhere' });
        const id = (accepted: typeof left) => (accepted.accepted ? accepted.record.id : '');
        // Only the owner's queued message goes; one leased to another process stays.
        expect(await store.inbound.drop([id(left), id(elsewhere)], 'web-1')).toBe(1);
        expect((await store.inbound.listQueued(session.id)).map((record) => record.text)).toEqual(['elsewhere']);
        expect((await store.inbound.findByDedupeKey(channel, session.conversationId, 'run-left'))?.state).toBe('dropped');
        // Something still queued: the session still runs. Nothing left: it does not.
        expect((await store.sessions.findById(session.id))?.status).toBe('running');
        expect(await store.inbound.drop([id(elsewhere)], 'web-2')).toBe(1);
        expect((await store.sessions.findById(session.id))?.status).toBe('completed');
        // Dropped messages are nobody's to take over.
        expect(await store.inbound.claimExpired({ owner: 'heir', leaseMs: 60_000, channels: [channel], limit: 10 })).toEqual([]);

        // Sent again (the same run retried): queued again under the new owner, accepted, and nothing stored twice.
        const again = await givenInbound(session, { channel, owner: 'web-3', dedupeKey: 'run-left', text: 'left' });
        expect(again).toMatchObject({ accepted: true, record: { id: id(left), state: 'queued', text: 'left' } });
        expect((await store.inbound.listQueued(session.id)).map((record) => record.text)).toEqual(['left']);
        expect(await givenInbound(session, { channel, owner: 'web-3', dedupeKey: 'run-left', text: 'left' })).toMatchObject({ accepted: false });
        // An answered message is never dropped.
        const answered = await givenInbound(session, { channel, owner: 'web-3', text: 'answered' });
        const [reply] = await store.messages.append(session.id, [{ role: 'assistant', audience: 'display', content: 'ok' }]);
        await store.inbound.markAnswered([id(answered)], { id: reply!.id, seq: reply!.seq });
        expect(await store.inbound.drop([id(answered)], 'web-3')).toBe(0);
        expect((await store.inbound.findByDedupeKey(channel, session.conversationId, 'run-left'))?.state).toBe('queued');
      });

      it('counts a takeover as an attempt only for a turn that began work (a model or tool call journaled) and did not finish', async () => {
        const channel = unique('chan');
        const session = await givenSession();
        const id = (accepted: Awaited<ReturnType<typeof givenInbound>>) => (accepted.accepted ? accepted.record.id : '');
        const waited = id(await givenInbound(session, { channel, owner: 'dead', leaseMs: 1, text: 'waited' }));
        const modelled = id(await givenInbound(session, { channel, owner: 'dead', leaseMs: 1, text: 'modelled' }));
        const tooled = id(await givenInbound(session, { channel, owner: 'dead', leaseMs: 1, text: 'tooled' }));
        // `modelled`'s turn kept a model call, `tooled`'s a tool call under way; `waited` was only queued.
        const modelTurn = unique('turn');
        await store.turns.open({ id: modelTurn, sessionId: session.id, owner: 'dead', inboundIds: [modelled] });
        await store.turns.recordModelCall(modelTurn, 0, '{"models":null}');
        const toolTurn = unique('turn');
        await store.turns.open({ id: toolTurn, sessionId: session.id, owner: 'dead', inboundIds: [tooled] });
        await store.toolCalls.start({
          callId: `${toolTurn}:call-1`,
          sessionId: session.id,
          userId: session.userId,
          correlationId: unique('corr'),
          name: 'book',
          arguments: '{}',
          turnId: toolTurn,
        });
        await new Promise((resolve) => setTimeout(resolve, 5)); // the 1 ms leases run out

        const attempts = (records: readonly { text: string; attempts: number }[]) => records.map((record) => [record.text, record.attempts]);
        const first = await store.inbound.claimExpired({ owner: 'heir', leaseMs: 1, channels: [channel], limit: 10 });
        expect(attempts(first)).toEqual([
          ['waited', 1],
          ['modelled', 2],
          ['tooled', 2],
        ]);
        // The heir died too, before its turns wrote anything: each takeover of a begun turn costs one more, a wait none.
        await new Promise((resolve) => setTimeout(resolve, 5));
        const second = await store.inbound.claimExpired({ owner: 'next-heir', leaseMs: 60_000, channels: [channel], limit: 10 });
        expect(attempts(second)).toEqual([
          ['waited', 1],
          ['modelled', 3],
          ['tooled', 3],
        ]);
        expect(attempts(await store.inbound.listQueued(session.id))).toEqual(attempts(second));
      });

      it('never hands a process its own messages, even with their lease run out: its own turns are still on them', async () => {
        const channel = unique('chan');
        const session = await givenSession();
        await givenInbound(session, { channel, owner: 'busy', leaseMs: 1, text: 'mine' });
        await new Promise((resolve) => setTimeout(resolve, 5)); // its renewal lagged: the lease ran out
        expect(await store.inbound.claimExpired({ owner: 'busy', leaseMs: 60_000, channels: [channel], limit: 10 })).toEqual([]);
        expect((await store.inbound.claimExpired({ owner: 'other', leaseMs: 60_000, channels: [channel], limit: 10 })).map((record) => record.text)).toEqual([
          'mine',
        ]);
      });

      it('renews the leases of one owner only, so a live process keeps its messages', async () => {
        const channel = unique('chan');
        const session = await givenSession();
        await givenInbound(session, { channel, owner: 'keeper', leaseMs: 1, text: 'kept' });
        await givenInbound(session, { channel, owner: 'gone', leaseMs: 1, text: 'lost' });
        expect(await store.inbound.renewLeases('keeper', 60_000)).toBe(1);
        await new Promise((resolve) => setTimeout(resolve, 5));
        const claimed = await store.inbound.claimExpired({ owner: 'heir', leaseMs: 60_000, channels: [channel], limit: 10 });
        expect(claimed.map((record) => record.text)).toEqual(['lost']);
      });

      it("holds a paused session's messages from every taker until it is resumed, then hands them out, one session at a time if asked", async () => {
        const channel = unique('chan');
        const [paused, other] = [await givenSession(), await givenSession()];
        const first = await givenInbound(paused, { channel, owner: 'a', text: 'p1' });
        await givenInbound(paused, { channel, owner: 'dead', leaseMs: 1, text: 'p2' });
        await givenInbound(other, { channel, owner: 'dead', leaseMs: 1, text: 'o1' });
        const id = first.accepted ? first.record.id : '';
        // Not paused: nothing is held, the turn may answer.
        expect(await store.inbound.hold([id])).toBe(0);
        expect(await store.sessions.setPaused(paused.id, true)).toBe(true);
        expect(await store.sessions.setPaused(paused.id, true)).toBe(false);
        expect((await store.sessions.findById(paused.id))?.pausedAt).toBeInstanceOf(Date);
        expect(await store.inbound.hold([id])).toBe(1);
        await new Promise((resolve) => setTimeout(resolve, 5)); // the 1 ms leases run out
        const recovered = await store.inbound.claimExpired({ owner: 'heir', leaseMs: 60_000, channels: [channel], limit: 10 });
        expect(recovered.map((record) => record.text)).toEqual(['o1']);
        expect((await store.inbound.listQueued(paused.id)).map((record) => record.text)).toEqual(['p1', 'p2']);

        expect(await store.sessions.setPaused(paused.id, false)).toBe(true);
        expect((await store.sessions.findById(paused.id))?.pausedAt).toBeNull();
        await givenInbound(other, { channel, owner: 'dead', leaseMs: 1, text: 'o2' });
        await new Promise((resolve) => setTimeout(resolve, 5));
        const resumed = await store.inbound.claimExpired({ owner: 'resumer', leaseMs: 60_000, channels: [channel], limit: 10, sessionId: paused.id });
        expect(resumed.map((record) => record.text)).toEqual(['p1', 'p2']);
        await expectStoreError(store.sessions.setPaused(randomUUID(), true), 'not_found');
      });
    });

    describe('operator actions', () => {
      it("ends a session: completed, its end time kept, and the model's context starts after it", async () => {
        const session = await givenSession();
        await store.messages.append(session.id, [text('before the end')]);
        const ended = await store.sessions.end(session.id);
        expect(ended).toMatchObject({ id: session.id, status: 'completed', endedAt: expect.any(Date) });
        expect(await store.messages.listRecent(session.id, { limit: 10, audience: 'display', sinceContextStart: true })).toEqual([]);
        await store.messages.append(session.id, [text('after it')]);
        expect(
          (await store.messages.listRecent(session.id, { limit: 10, audience: 'display', sinceContextStart: true })).map((message) => message.content),
        ).toEqual(['after it']);
        await expectStoreError(store.sessions.end(randomUUID()), 'not_found');
      });

      it('records actions newest first, and one per idempotency key, also when two come at once', async () => {
        const session = await givenSession();
        const key = unique('key');
        const pause = await store.adminActions.record({ action: 'pause', actor: 'admin', requestId: 'req-1', sessionId: session.id, userId: session.userId });
        expect(pause).toMatchObject({
          recorded: true,
          action: { action: 'pause', actor: 'admin', operatorId: null, requestId: 'req-1', idempotencyKey: null, details: {} },
        });
        const sends = await Promise.all(
          [1, 2, 3].map((n) =>
            store.transaction((tx) =>
              tx.adminActions.record({ action: 'send', actor: `ops-${n}`, idempotencyKey: key, sessionId: session.id, details: { n } }),
            ),
          ),
        );
        const recorded = sends.filter((send) => send.recorded);
        expect(recorded).toHaveLength(1);
        const first = recorded[0]!.recorded ? recorded[0]!.action : undefined;
        for (const send of sends) if (!send.recorded) expect(send.existing).toEqual(first);
        const listed = await store.adminActions.list({ limit: 10, sessionId: session.id });
        expect(listed.map((action) => action.action)).toEqual(['send', 'pause']);
        expect(listed[0]).toEqual(first);
        expect(await store.adminActions.list({ limit: 1, sessionId: session.id })).toHaveLength(1);
        expect((await store.adminActions.list({ limit: 500 })).map((action) => action.id)).toContain(first!.id);
      });

      it('keeps the operator account that acted beside its name', async () => {
        const session = await givenSession();
        const operatorId = randomUUID();
        await store.adminActions.record({ action: 'end', actor: 'Olena', operatorId, sessionId: session.id, userId: session.userId });
        expect(await store.adminActions.list({ limit: 1, sessionId: session.id })).toEqual([expect.objectContaining({ actor: 'Olena', operatorId })]);
      });
    });

    describe('operator accounts', () => {
      const digest = () => randomUUID().replaceAll('-', '').repeat(2);

      it('adds accounts with names unique whatever their case, and finds them by id, name and token digest', async () => {
        const name = unique('Olena');
        const token = digest();
        const added = await store.operatorAccounts.create({ name, role: 'operator', tokenDigest: token });
        if (!added.created) throw new Error('not created');
        expect(added.account).toEqual({ id: expect.any(String), name, role: 'operator', createdAt: expect.any(Date), disabledAt: null });
        expect(await store.operatorAccounts.create({ name: name.toUpperCase(), role: 'admin', tokenDigest: digest() })).toEqual({ created: false });
        expect(await store.operatorAccounts.findById(added.account.id)).toEqual(added.account);
        expect(await store.operatorAccounts.findByName(name.toLowerCase())).toEqual(added.account);
        expect(await store.operatorAccounts.findActiveByTokenDigest(token)).toEqual(added.account);
        expect(await store.operatorAccounts.findActiveByTokenDigest(digest())).toBeUndefined();
        expect(await store.operatorAccounts.findById(randomUUID())).toBeUndefined();
        expect(await store.operatorAccounts.findByName(unique('nobody'))).toBeUndefined();
      });

      it('gives one of two accounts made at once with one name the name', async () => {
        const name = unique('Taras');
        const made = await Promise.all(
          ['operator', 'admin'].map((role) =>
            store.transaction((tx) => tx.operatorAccounts.create({ name, role: role as 'operator' | 'admin', tokenDigest: digest() })),
          ),
        );
        expect(made.filter((result) => result.created)).toHaveLength(1);
      });

      it('lists accounts oldest first, disabled ones too', async () => {
        const names = [unique('a'), unique('b')];
        for (const name of names) await store.operatorAccounts.create({ name, role: 'admin', tokenDigest: digest() });
        const listed = (await store.operatorAccounts.list()).map((account) => account.name).filter((name) => names.includes(name));
        expect(listed).toEqual(names);
      });

      it("stops a disabled account's token at once, keeps it from a new token, and keeps its name taken", async () => {
        const name = unique('Mykola');
        const token = digest();
        const added = await store.operatorAccounts.create({ name, role: 'operator', tokenDigest: token });
        if (!added.created) throw new Error('not created');
        const { id } = added.account;
        const fresh = digest();
        expect(await store.operatorAccounts.replaceTokenDigest(id, fresh)).toBe(true);
        expect(await store.operatorAccounts.findActiveByTokenDigest(token)).toBeUndefined();
        expect(await store.operatorAccounts.findActiveByTokenDigest(fresh)).toMatchObject({ id });

        const at = new Date('2026-11-27T10:00:00.000Z');
        expect(await store.operatorAccounts.disable(id, at)).toBe(true);
        expect(await store.operatorAccounts.disable(id, new Date())).toBe(false);
        expect(await store.operatorAccounts.findActiveByTokenDigest(fresh)).toBeUndefined();
        expect(await store.operatorAccounts.findById(id)).toMatchObject({ disabledAt: at });
        expect(await store.operatorAccounts.replaceTokenDigest(id, digest())).toBe(false);
        expect(await store.operatorAccounts.replaceTokenDigest(randomUUID(), digest())).toBe(false);
        expect(await store.operatorAccounts.create({ name, role: 'operator', tokenDigest: digest() })).toEqual({ created: false });
      });
    });

    describe('outbox', () => {
      /** The parts of one reply in a conversation, pending, leased to `owner` for `leaseMs`. */
      async function givenReply(
        session: Session,
        channel: string,
        conversationId: string,
        texts: readonly string[],
        lease: { owner?: string; leaseMs?: number } = {},
      ) {
        const replyMessageId = unique('reply');
        return store.deliveries.add(
          texts.map((part, index) => ({
            sessionId: session.id,
            replyMessageId,
            part: index,
            text: part,
            channel,
            conversationId,
            accountId: 'acct',
            inReplyTo: ['m1'],
            correlationId: unique('corr'),
          })),
          { owner: lease.owner ?? 'dead', leaseMs: lease.leaseMs ?? 1 },
        );
      }
      const claim = (channel: string, owner = 'heir') =>
        store.deliveries.claimExpired({ owner, leaseMs: 60_000, channels: [channel], limit: 10 }).then((parts) => parts.map((part) => part.text));
      const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

      it("keeps a reply plan's reaction and a quoting message, in order, and hands them out after a crash as they were", async () => {
        const channel = unique('chan');
        const session = await givenSession();
        const replyMessageId = unique('reply');
        const base = {
          sessionId: session.id,
          replyMessageId,
          channel,
          conversationId: 'conv',
          accountId: 'acct',
          inReplyTo: ['77'],
          correlationId: unique('corr'),
        };
        const added = await store.deliveries.add(
          [
            { ...base, part: 0, text: 'Got it.', replyTo: '77' },
            { ...base, part: 1, text: '', reaction: { emoji: '👍', messageId: '77' } },
            { ...base, part: 2, text: 'Plain.' },
          ],
          { owner: 'dead', leaseMs: 1 },
        );
        expect(added.map((part) => [part.replyTo, part.reaction])).toEqual([
          ['77', null],
          [null, { emoji: '👍', messageId: '77' }],
          [null, null],
        ]);
        await store.deliveries.markSent(added[0]!.id, 'tg-1');
        await pause(5);
        const claimed = await store.deliveries.claimExpired({ owner: 'heir', leaseMs: 60_000, channels: [channel], limit: 10 });
        expect(claimed.map((part) => [part.part, part.text, part.replyTo, part.reaction])).toEqual([
          [1, '', null, { emoji: '👍', messageId: '77' }],
          [2, 'Plain.', null, null],
        ]);
        expect(await store.deliveries.listForReply(replyMessageId)).toEqual(
          added.map((part, index) => (index === 0 ? { ...part, state: 'sent', channelMessageId: 'tg-1' } : part)),
        );
      });

      it('keeps a postponed part pending and hands it out only once its time came, to one new owner', async () => {
        const channel = unique('chan');
        const session = await givenSession();
        const [first, second] = await givenReply(session, channel, 'conv', ['p0', 'p1'], { owner: 'sender', leaseMs: 60_000 });
        await store.deliveries.postpone([first!.id, second!.id], 150);
        // Leased to nobody: the process that postponed them does not keep them by renewing its leases.
        expect(await store.deliveries.renewLeases('sender', 60_000)).toBe(0);
        expect(await claim(channel)).toEqual([]);
        // A new reply of the conversation finds them ahead of it, still waiting; their own reply does not.
        const ahead = () => store.deliveries.queuedAhead({ channel, conversationId: 'conv', replyMessageId: 'a new reply' });
        const waiting = await ahead();
        expect(waiting).toBeGreaterThan(0);
        expect(waiting).toBeLessThanOrEqual(150);
        expect(await store.deliveries.queuedAhead({ channel, conversationId: 'conv', replyMessageId: first!.replyMessageId })).toBeUndefined();
        // Its time came, but nobody has taken it yet: it is still ahead, with nothing left to wait for.
        await expect.poll(ahead, { timeout: 5_000 }).toBe(0);
        await pause(2);
        const [b, c] = await Promise.all([claim(channel, 'b'), claim(channel, 'c')]);
        expect([...b, ...c]).toEqual(['p0', 'p1']);
        expect((await store.deliveries.listForReply(first!.replyMessageId)).map((part) => part.state)).toEqual(['pending', 'pending']);
        // Taken: being sent (still ahead of a new reply, with no wait), and nobody else gets them while the lease lives.
        expect(await ahead()).toBe(0);
        expect(await claim(channel, 'd')).toEqual([]);
        for (const part of [first!, second!]) await store.deliveries.markSent(part.id, `tg-${part.part}`);
        expect(await ahead()).toBeUndefined();
      });

      it('holds the later parts of a conversation behind a postponed one, and other conversations not at all', async () => {
        const channel = unique('chan');
        const session = await givenSession();
        const [, held] = await givenReply(session, channel, 'slow', ['a0', 'a1']);
        await pause(2); // the next reply is stored later
        await givenReply(session, channel, 'slow', ['b0']);
        await givenReply(session, channel, 'other', ['c0']);
        // a0 was sent; a1 got a long flood wait. b0 (a later reply, orphaned) must not overtake it.
        await store.deliveries.markSent((await store.deliveries.listForReply(held!.replyMessageId))[0]!.id, 'tg-1');
        await store.deliveries.postpone([held!.id], 60_000);
        await pause(5); // the 1 ms leases run out
        expect(await claim(channel)).toEqual(['c0']);
        expect(await store.deliveries.queuedAhead({ channel, conversationId: 'quiet', replyMessageId: 'r' })).toBeUndefined();
        // Its time comes (postponed again with no wait): now both leave, in order.
        await store.deliveries.postpone([held!.id], 0);
        await pause(2);
        expect(await claim(channel)).toEqual(['a1', 'b0']);
      });

      it('leaves a part that is no longer pending alone', async () => {
        const channel = unique('chan');
        const session = await givenSession();
        const [sent, failed] = await givenReply(session, channel, 'conv', ['s', 'f'], { owner: 'sender', leaseMs: 60_000 });
        await store.deliveries.markSent(sent!.id, 'tg-9');
        await store.deliveries.markFailed(failed!.id, 'blocked');
        await store.deliveries.postpone([sent!.id, failed!.id], 1);
        await store.deliveries.postpone([], 1);
        expect((await store.deliveries.listForReply(sent!.replyMessageId)).map((part) => [part.state, part.channelMessageId])).toEqual([
          ['sent', 'tg-9'],
          ['failed', null],
        ]);
        expect(await store.deliveries.queuedAhead({ channel, conversationId: 'conv', replyMessageId: 'a new reply' })).toBeUndefined();
      });
    });

    describe('recorded messages', () => {
      /** A session and where recordings into it go; the conversation is on channel `console`. */
      async function givenTarget() {
        const session = await givenSession();
        return {
          session,
          target: {
            channel: session.channel,
            conversationId: session.conversationId,
            sessionId: session.id,
            accountNamespace: 'console',
            accountId: unique('acct'),
            userId: session.userId,
          },
        };
      }
      const entry = (channelMessageId: string, content: string, role: 'user' | 'assistant' = 'user'): RecordedNewMessage => ({
        role,
        audience: 'display',
        content,
        channelMessageId,
        meta: { recorded: 'imported' },
      });

      it('appends new messages in the order given and skips ids it has seen, also within one call', async () => {
        const { session, target } = await givenTarget();
        const first = await store.recorded.append(target, [
          entry('10', 'hi'),
          entry('11', 'hello, how can I help?', 'assistant'),
          entry('10', 'hi again under the same id'),
        ]);
        expect(first.map((message) => [message.seq, message.role, message.content])).toEqual([
          [1, 'user', 'hi'],
          [2, 'assistant', 'hello, how can I help?'],
        ]);
        expect(first[0]!.meta).toEqual({ recorded: 'imported' });
        // Imported again, with one message more: only that one is new.
        const second = await store.recorded.append(target, [entry('10', 'hi'), entry('11', 'hello, how can I help?', 'assistant'), entry('12', 'a question')]);
        expect(second.map((message) => [message.seq, message.content])).toEqual([[3, 'a question']]);
        expect(await store.recorded.append(target, [entry('12', 'a question')])).toEqual([]);
        expect((await store.messages.listRecent(session.id, { limit: 10 })).map((message) => message.content)).toEqual([
          'hi',
          'hello, how can I help?',
          'a question',
        ]);
        // The same id in another conversation is another message.
        const other = await givenTarget();
        expect(await store.recorded.append(other.target, [entry('10', 'hi')])).toHaveLength(1);
      });

      it('skips a message that came through the inbox with that message id', async () => {
        const { session, target } = await givenTarget();
        await store.inbound.accept(
          {
            channel: session.channel,
            conversationId: session.conversationId,
            accountId: target.accountId,
            userId: session.userId,
            sessionId: session.id,
            text: 'sent live',
            messageId: '20',
            dedupeKey: null,
            correlationId: unique('corr'),
            languageHint: null,
            displayName: null,
            conversationKind: 'direct',
          },
          { owner: 'p', leaseMs: 60_000 },
        );
        const stored = await store.recorded.append(target, [entry('19', 'before'), entry('20', 'sent live'), entry('21', 'after')]);
        expect(stored.map((message) => message.content)).toEqual(['before', 'after']);
      });

      it('stores each id once when two calls record it at the same time', async () => {
        const { session, target } = await givenTarget();
        const batch = Array.from({ length: 20 }, (_, index) => entry(String(index), `message ${index}`));
        const [a, b] = await Promise.all([store.recorded.append(target, batch), store.recorded.append(target, batch)]);
        expect(a.length + b.length).toBe(20);
        const stored = await store.messages.listRecent(session.id, { limit: 50 });
        expect(stored).toHaveLength(20);
        expect(new Set(stored.map((message) => message.content)).size).toBe(20);
      });

      it('refuses an unknown session and stores nothing', async () => {
        const { target } = await givenTarget();
        await expectStoreError(store.recorded.append({ ...target, sessionId: randomUUID() }, [entry('1', 'lost')]), 'not_found');
        expect(await store.recorded.append(target, [entry('1', 'kept')])).toHaveLength(1);
      });
    });

    describe('lookups without creating', () => {
      it('finds a user by account and a session by conversation, and nothing for unknown ones', async () => {
        const accountId = unique('acct');
        const { user } = await store.users.resolveAccount({ channel: 'console', accountId });
        const session = await store.sessions.open({ userId: user.id, channel: 'console', conversationId: unique('conv') });
        expect((await store.users.findByAccount('console', accountId))?.id).toBe(user.id);
        expect(await store.users.findByAccount('web', accountId)).toBeUndefined();
        expect((await store.sessions.findByConversation('console', session.conversationId))?.id).toBe(session.id);
        expect(await store.sessions.findByConversation('console', unique('none'))).toBeUndefined();
        expect(await store.messages.findBySeq(session.id, 1)).toBeUndefined();
      });
    });

    describe('channel leases', () => {
      const TTL = 30_000;

      it('gives a free lease to the first claimant and refuses a second holder, naming the first', async () => {
        const channel = unique('telegram-user');
        const first = await store.channelLeases.claim({ channel, holder: 'host-a:101:x', now: 1_000, ttlMs: TTL });
        expect(first).toEqual({ channel, holder: 'host-a:101:x', acquiredAt: 1_000, expiresAt: 31_000 });
        const second = await store.channelLeases.claim({ channel, holder: 'host-b:202:y', now: 2_000, ttlMs: TTL });
        expect(second).toEqual(first);
        expect(await store.channelLeases.get(channel)).toEqual(first);
      });

      it('lets the holder renew and re-claim (keeping when it took the lease), and nobody else renew', async () => {
        const channel = unique('telegram-user');
        await store.channelLeases.claim({ channel, holder: 'a', now: 1_000, ttlMs: TTL });
        expect(await store.channelLeases.renew({ channel, holder: 'a', now: 20_000, ttlMs: TTL })).toBe(true);
        expect(await store.channelLeases.renew({ channel, holder: 'b', now: 20_000, ttlMs: TTL })).toBe(false);
        expect(await store.channelLeases.get(channel)).toMatchObject({ holder: 'a', acquiredAt: 1_000, expiresAt: 50_000 });
        // Past the first expiry but within the renewed one: still a's.
        expect(await store.channelLeases.claim({ channel, holder: 'b', now: 40_000, ttlMs: TTL })).toMatchObject({ holder: 'a' });
        expect(await store.channelLeases.claim({ channel, holder: 'a', now: 45_000, ttlMs: TTL })).toEqual({
          channel,
          holder: 'a',
          acquiredAt: 1_000,
          expiresAt: 75_000,
        });
      });

      it('hands an expired lease (a crashed holder) to the next claimant, and the old holder cannot renew it', async () => {
        const channel = unique('telegram-user');
        await store.channelLeases.claim({ channel, holder: 'crashed', now: 1_000, ttlMs: TTL });
        const taken = await store.channelLeases.claim({ channel, holder: 'next', now: 31_000, ttlMs: TTL });
        expect(taken).toEqual({ channel, holder: 'next', acquiredAt: 31_000, expiresAt: 61_000 });
        expect(await store.channelLeases.renew({ channel, holder: 'crashed', now: 31_001, ttlMs: TTL })).toBe(false);
      });

      it('gives exactly one of many simultaneous claimants the lease', async () => {
        const channel = unique('telegram-user');
        const holders = Array.from({ length: 6 }, (_, index) => `racer-${index}`);
        const results = await Promise.all(holders.map((holder) => store.channelLeases.claim({ channel, holder, now: 5_000, ttlMs: TTL })));
        const winner = results[0]!.holder;
        expect(holders).toContain(winner);
        expect(results.every((lease) => lease.holder === winner)).toBe(true);
      });

      it('frees the lease on release by its holder only', async () => {
        const channel = unique('telegram-user');
        await store.channelLeases.claim({ channel, holder: 'a', now: 1_000, ttlMs: TTL });
        await store.channelLeases.release(channel, 'b');
        expect(await store.channelLeases.get(channel)).toMatchObject({ holder: 'a' });
        await store.channelLeases.release(channel, 'a');
        expect(await store.channelLeases.get(channel)).toBeUndefined();
        expect(await store.channelLeases.claim({ channel, holder: 'b', now: 2_000, ttlMs: TTL })).toMatchObject({ holder: 'b', acquiredAt: 2_000 });
      });
    });

    describe('dashboard sessions', () => {
      it('keeps a sign-in until it ends or is signed out, in every later look', async () => {
        const [id, other] = [unique('dash'), unique('dash')];
        await store.dashboardSessions.create({ id, createdAt: 1_000, expiresAt: 61_000 });
        await store.dashboardSessions.create({ id: other, createdAt: 1_000, expiresAt: 61_000 });
        expect(await store.dashboardSessions.findActive(id, 60_999)).toEqual({ operatorId: null });
        expect(await store.dashboardSessions.findActive(id, 61_000)).toBeUndefined();
        expect(await store.dashboardSessions.findActive(unique('dash'), 2_000)).toBeUndefined();
        await store.dashboardSessions.revoke(id);
        await store.dashboardSessions.revoke(id);
        await store.dashboardSessions.revoke(unique('dash'));
        expect(await store.dashboardSessions.findActive(id, 2_000)).toBeUndefined();
        expect(await store.dashboardSessions.findActive(other, 2_000)).toBeDefined();
      });

      it('drops ended sign-ins when a new one is made, and on request', async () => {
        const [ended, later, fresh] = [unique('dash'), unique('dash'), unique('dash')];
        await store.dashboardSessions.create({ id: ended, createdAt: 1_000, expiresAt: 2_000 });
        await store.dashboardSessions.create({ id: later, createdAt: 1_000, expiresAt: 9_000 });
        await store.dashboardSessions.create({ id: fresh, createdAt: 5_000, expiresAt: 65_000 });
        // Asked about a time before its end, the dropped one is still gone: the row went, not just its validity.
        expect(await store.dashboardSessions.findActive(ended, 1_500)).toBeUndefined();
        expect(await store.dashboardSessions.findActive(later, 1_500)).toBeDefined();
        expect(await store.dashboardSessions.deleteExpired(10_000)).toBeGreaterThanOrEqual(1);
        expect(await store.dashboardSessions.findActive(later, 1_500)).toBeUndefined();
        expect(await store.dashboardSessions.findActive(fresh, 10_000)).toBeDefined();
      });

      it("names the operator signed in, and signs all of one operator's sign-ins out, no one else's", async () => {
        const [olena, taras] = [randomUUID(), randomUUID()];
        const [first, second, theirs, admins] = [unique('dash'), unique('dash'), unique('dash'), unique('dash')];
        await store.dashboardSessions.create({ id: first, createdAt: 1_000, expiresAt: 61_000, operatorId: olena });
        await store.dashboardSessions.create({ id: second, createdAt: 1_000, expiresAt: 61_000, operatorId: olena });
        await store.dashboardSessions.create({ id: theirs, createdAt: 1_000, expiresAt: 61_000, operatorId: taras });
        await store.dashboardSessions.create({ id: admins, createdAt: 1_000, expiresAt: 61_000, operatorId: null });
        expect(await store.dashboardSessions.findActive(first, 2_000)).toEqual({ operatorId: olena });
        expect(await store.dashboardSessions.revokeOperator(olena)).toBe(2);
        expect(await store.dashboardSessions.findActive(first, 2_000)).toBeUndefined();
        expect(await store.dashboardSessions.findActive(second, 2_000)).toBeUndefined();
        expect(await store.dashboardSessions.findActive(theirs, 2_000)).toEqual({ operatorId: taras });
        expect(await store.dashboardSessions.findActive(admins, 2_000)).toEqual({ operatorId: null });
      });
    });

    describe('handoffs', () => {
      const ask = (session: Session, at: number, reason = 'wants a person') =>
        store.handoffs.open({ sessionId: session.id, userId: session.userId, reason, source: 'model', at });

      it('keeps one open handoff per conversation, and a new one after it closes', async () => {
        const session = await givenSession();
        const first = await ask(session, 1_000);
        expect(first.opened).toBe(true);
        expect(first.handoff).toMatchObject({ sessionId: session.id, reason: 'wants a person', source: 'model', notices: 0, takenBy: null });
        expect(first.handoff.nextNoticeAt?.getTime()).toBe(1_000);
        const again = await ask(session, 2_000, 'asks again');
        expect(again).toEqual({ handoff: first.handoff, opened: false });
        expect((await store.handoffs.close(session.id, 'Olena', 3_000))?.closedBy).toBe('Olena');
        expect(await store.handoffs.close(session.id, 'Olena', 3_000)).toBeUndefined();
        expect(await store.handoffs.findOpen(session.id)).toBeUndefined();
        const next = await ask(session, 4_000, 'later');
        expect(next.opened).toBe(true);
        expect(next.handoff.id).not.toBe(first.handoff.id);
      });

      it('gives each notice round to exactly one of the processes racing for it, and none once taken', async () => {
        const session = await givenSession();
        const { handoff } = await ask(session, 10_000);
        expect((await store.handoffs.listDue(9_999, 1000)).some((due) => due.id === handoff.id)).toBe(false);
        const due = (await store.handoffs.listDue(10_000, 1000)).find((candidate) => candidate.id === handoff.id);
        expect(due).toBeDefined();
        const claims = await Promise.all([store.handoffs.claimNotice(due!, 70_000), store.handoffs.claimNotice(due!, 70_000)]);
        expect(claims.filter(Boolean)).toHaveLength(1);
        const open = await store.handoffs.findOpen(session.id);
        expect(open).toMatchObject({ notices: 1 });
        expect(open?.nextNoticeAt?.getTime()).toBe(70_000);
        expect((await store.handoffs.listDue(69_999, 1000)).some((candidate) => candidate.id === handoff.id)).toBe(false);
        const taken = await store.handoffs.take(session.id, 'Olena', 20_000);
        expect(taken).toMatchObject({ takenBy: 'Olena', nextNoticeAt: null });
        expect(await store.handoffs.claimNotice(open!, null)).toBe(false);
        expect((await store.handoffs.listDue(100_000, 1000)).some((candidate) => candidate.id === handoff.id)).toBe(false);
        expect((await store.handoffs.listOpen(1000)).some((candidate) => candidate.id === handoff.id)).toBe(true);
      });

      it('assigns a conversation to one operator; another takes it only when forced', async () => {
        const session = await givenSession();
        const [olena, mark] = await Promise.all([store.sessions.assign(session.id, 'Olena'), store.sessions.assign(session.id, 'Mark')]);
        const winner = olena.changed ? 'Olena' : 'Mark';
        expect([olena.changed, mark.changed].filter(Boolean)).toHaveLength(1);
        expect(olena.assignedTo).toBe(winner);
        expect(mark.assignedTo).toBe(winner);
        const loser = winner === 'Olena' ? 'Mark' : 'Olena';
        expect(await store.sessions.assign(session.id, winner)).toEqual({ changed: false, assignedTo: winner });
        expect(await store.sessions.assign(session.id, loser, { force: true })).toEqual({ changed: true, assignedTo: loser });
        expect((await store.sessions.findById(session.id))?.assignedTo).toBe(loser);
        expect(await store.sessions.assign(session.id, null)).toEqual({ changed: true, assignedTo: null });
        expect((await store.sessions.findById(session.id))?.assignedAt).toBeNull();
        await expectStoreError(store.sessions.assign(randomUUID(), 'Olena'), 'not_found');
      });
    });

    describe('conversation summaries', () => {
      const summaryOf = (session: Session, toSeq: number, text: string, fromSeq = 0) => ({
        sessionId: session.id,
        fromSeq,
        toSeq,
        text,
        model: 'summariser',
        inputTokens: 900,
        outputTokens: 120,
        cost: '0.000120',
        currency: 'EUR',
      });

      it('counts what is left to summarise after the newest summary, keeping the newest messages out', async () => {
        const session = await givenSession();
        const said = await store.messages.append(session.id, [
          text('one'),
          text('two, a longer message than the others'),
          { role: 'tool', audience: 'audit', content: 'audit records are never summarised' },
          text('three'),
          text('four'),
          text('five'),
          text('six'),
        ]);
        const display = said.filter((message) => message.audience === 'display');
        const tokens = (messages: typeof display) => messages.reduce((sum, message) => sum + message.tokenEstimate, 0);
        const backlog = await store.summaries.backlog(session.id, 2);
        expect(backlog).toEqual({
          latest: undefined,
          contextStart: 0,
          unsummarised: { messages: 6, tokens: tokens(display) },
          older: { messages: 4, tokens: tokens(display.slice(0, 4)) },
          recentFrom: display[4]!.seq,
        });
        expect(await store.summaries.backlog(session.id, 0)).toMatchObject({ older: { messages: 6, tokens: tokens(display) }, recentFrom: null });
        expect((await store.summaries.backlog(session.id, 10)).older).toEqual({ messages: 0, tokens: 0 });
        // What a summary of the older part reads: display messages only, oldest first, within the range and the limit.
        const older = await store.messages.listBetween(session.id, { afterSeq: 0, beforeSeq: backlog.recentFrom, audience: 'display', limit: 100 });
        expect(older.map((message) => message.content)).toEqual(['one', 'two, a longer message than the others', 'three', 'four']);
        const page = await store.messages.listBetween(session.id, { afterSeq: display[0]!.seq, beforeSeq: null, audience: 'display', limit: 2 });
        expect(page.map((message) => message.content)).toEqual(['two, a longer message than the others', 'three']);

        // Once a summary covers the first three, only what follows it is left.
        const claim = await store.summaries.claim({ sessionId: session.id, owner: 'a', now: 1_000, ttlMs: 60_000 });
        const added = await store.summaries.add(summaryOf(session, display[2]!.seq, 'Ann said one, two and three.'), claim!);
        expect(added).toMatchObject({ version: 1, fromSeq: 0, toSeq: display[2]!.seq, cost: '0.00012', currency: 'EUR', model: 'summariser' });
        expect(await store.summaries.latest(session.id)).toEqual(added);
        expect(await store.summaries.backlog(session.id, 2)).toEqual({
          latest: added,
          contextStart: 0,
          unsummarised: { messages: 3, tokens: tokens(display.slice(3)) },
          older: { messages: 1, tokens: tokens(display.slice(3, 4)) },
          recentFrom: display[4]!.seq,
        });
      });

      it('adds a version only under the claim it was written under; one writer at a time, and a run-out claim is taken over', async () => {
        const session = await givenSession();
        const [message] = await store.messages.append(session.id, [text('remember: the door code is 4711')]);
        const claim = (owner: string, now: number) => store.summaries.claim({ sessionId: session.id, owner, now, ttlMs: 500 });
        const racing = await Promise.all([claim('a', 1_000), claim('b', 1_000)]);
        expect(racing.filter((id) => id !== undefined)).toHaveLength(1);
        const first = racing.find((id) => id !== undefined)!;
        expect(await claim('c', 1_499)).toBeUndefined();
        // The holder crashed: its claim runs out, and another writer takes it over; the old holder stores nothing.
        const second = await claim('c', 1_500);
        expect(second).toBeDefined();
        expect(await store.summaries.add(summaryOf(session, message!.seq, 'stale'), first)).toBeUndefined();
        expect(await store.summaries.latest(session.id)).toBeUndefined();
        const v1 = await store.summaries.add(summaryOf(session, message!.seq, 'The door code is 4711.'), second!);
        expect(v1?.version).toBe(1);
        // Adding ended the claim: the next writer gets it at once, and a released claim is free too.
        const third = await claim('d', 1_600);
        expect(third).toBeDefined();
        await store.summaries.release(session.id, third!);
        const fourth = await claim('e', 1_600);
        expect(fourth).toBeDefined();
        expect(await store.summaries.add(summaryOf(session, message!.seq, 'Door code 4711 (v2).'), third!)).toBeUndefined();
        const v2 = await store.summaries.add(summaryOf(session, message!.seq, 'Door code 4711 (v2).'), fourth!);
        expect(v2?.version).toBe(2);
        expect((await store.summaries.latest(session.id))?.text).toBe('Door code 4711 (v2).');
        // A stopped process's claims end when it is retired (its restart on the same host).
        expect(await claim('dead', 2_000)).toBeDefined();
        expect(await claim('f', 2_100)).toBeUndefined();
        await store.processes.retire('dead');
        expect(await claim('f', 2_100)).toBeDefined();
      });

      it('reads no summary of before a reset or an end: the context starts afresh', async () => {
        const session = await givenSession();
        const said = await store.messages.append(session.id, [text('one'), text('two'), text('three')]);
        const claimed = await store.summaries.claim({ sessionId: session.id, owner: 'a', now: 1_000, ttlMs: 60_000 });
        await store.summaries.add(summaryOf(session, said[1]!.seq, 'One and two.'), claimed!);
        await store.sessions.resetContext(session.id);
        expect(await store.summaries.latest(session.id)).toBeUndefined();
        expect(await store.summaries.backlog(session.id, 0)).toEqual({
          latest: undefined,
          contextStart: said[2]!.seq,
          unsummarised: { messages: 0, tokens: 0 },
          older: { messages: 0, tokens: 0 },
          recentFrom: null,
        });
        const [four] = await store.messages.append(session.id, [text('four')]);
        const again = await store.summaries.claim({ sessionId: session.id, owner: 'a', now: 2_000, ttlMs: 60_000 });
        const fresh = await store.summaries.add(summaryOf(session, four!.seq, 'Four.', said[2]!.seq), again!);
        expect(fresh?.version).toBe(2);
        expect((await store.summaries.latest(session.id))?.text).toBe('Four.');
        await store.sessions.end(session.id);
        expect(await store.summaries.latest(session.id)).toBeUndefined();
      });
    });

    describe('conversation claims', () => {
      const TTL = 2_500;
      const conversation = () => ({ channel: 'web', conversationId: unique('conv') });

      it('gives a free conversation to the first process, refuses another while it holds it, and hands it on once released', async () => {
        const where = conversation();
        const first = await store.claims.claim({ ...where, owner: 'a', now: 1_000, ttlMs: TTL });
        expect(first).toEqual({ claimed: true, token: 1, previousOwner: null });
        expect(await store.claims.claim({ ...where, owner: 'b', now: 2_000, ttlMs: TTL })).toEqual({ claimed: false, owner: 'a' });
        await store.claims.release({ ...where, owner: 'a', token: 1 });
        // Released: b gets it at once, with a larger token, and learns that a wrote to it last.
        expect(await store.claims.claim({ ...where, owner: 'b', now: 2_100, ttlMs: TTL })).toEqual({ claimed: true, token: 2, previousOwner: 'a' });
        await store.claims.release({ ...where, owner: 'b', token: 2 });
        expect(await store.claims.claim({ ...where, owner: 'b', now: 2_200, ttlMs: TTL })).toEqual({ claimed: true, token: 3, previousOwner: 'b' });
      });

      it('keeps a claim its owner renews, and hands one whose owner stopped renewing to the next process', async () => {
        const where = conversation();
        await store.claims.claim({ ...where, owner: 'a', now: 1_000, ttlMs: TTL });
        expect(await store.claims.renew('a', 3_000, TTL)).toBeGreaterThanOrEqual(1);
        // Past the first expiry, within the renewed one.
        expect(await store.claims.claim({ ...where, owner: 'b', now: 5_000, ttlMs: TTL })).toEqual({ claimed: false, owner: 'a' });
        expect(await store.claims.claim({ ...where, owner: 'b', now: 5_501, ttlMs: TTL })).toEqual({ claimed: true, token: 2, previousOwner: 'a' });
        // a's renewal no longer touches it, and its release does not free b's claim.
        await store.claims.renew('a', 5_600, TTL);
        await store.claims.release({ ...where, owner: 'a', token: 1 });
        expect(await store.claims.claim({ ...where, owner: 'c', now: 5_700, ttlMs: TTL })).toEqual({ claimed: false, owner: 'b' });
      });

      it("fences: only the owner's newest token holds, checked inside a transaction", async () => {
        const where = conversation();
        const old = await store.claims.claim({ ...where, owner: 'a', now: 1_000, ttlMs: TTL });
        if (!old.claimed) throw new Error('claim refused');
        const fence = { ...where, owner: 'a', token: old.token };
        expect(await store.transaction((tx) => tx.claims.holds(fence))).toBe(true);
        // a paused past its claim; b took the conversation over.
        await store.claims.claim({ ...where, owner: 'b', now: 9_000, ttlMs: TTL });
        expect(await store.transaction((tx) => tx.claims.holds(fence))).toBe(false);
        expect(await store.transaction((tx) => tx.claims.holds({ ...where, owner: 'b', token: old.token + 1 }))).toBe(true);
        expect(await store.transaction((tx) => tx.claims.holds({ ...conversation(), owner: 'a', token: 1 }))).toBe(false);
      });

      it("answers a claim with the session's pause when asked, in the claim itself", async () => {
        const session = await givenSession();
        const where = { channel: session.channel, conversationId: session.conversationId };
        const first = await store.claims.claim({ ...where, owner: 'a', now: 1_000, ttlMs: TTL, pausedSession: session.id });
        expect(first).toEqual({ claimed: true, token: 1, previousOwner: null, paused: false });
        await store.sessions.setPaused(session.id, true);
        expect(await store.claims.claim({ ...where, owner: 'a', now: 1_100, ttlMs: TTL, pausedSession: session.id })).toMatchObject({
          claimed: true,
          paused: true,
        });
        // A refused claim says nothing of the session.
        expect(await store.claims.claim({ ...where, owner: 'b', now: 1_200, ttlMs: TTL, pausedSession: session.id })).toEqual({ claimed: false, owner: 'a' });
      });

      it('releases in a closing write only the claim the fence names, and frees it for the next process', async () => {
        const where = conversation();
        const old = await store.claims.claim({ ...where, owner: 'a', now: 1_000, ttlMs: TTL });
        if (!old.claimed) throw new Error('claim refused');
        const fence = { ...where, owner: 'a', token: old.token };
        expect(await store.transaction((tx) => tx.claims.releaseIfHeld(fence))).toBe(true);
        // Released, a's token still holds (its next write under the same claim may follow) until b claims.
        expect(await store.transaction((tx) => tx.claims.holds(fence))).toBe(true);
        expect(await store.claims.claim({ ...where, owner: 'b', now: 1_100, ttlMs: TTL })).toMatchObject({ claimed: true, previousOwner: 'a' });
        expect(await store.transaction((tx) => tx.claims.releaseIfHeld(fence))).toBe(false);
        // A closing write that rolls back releases nothing.
        const b = { ...where, owner: 'b', token: old.token + 1 };
        await expect(
          store.transaction(async (tx) => {
            await tx.claims.releaseIfHeld(b);
            throw new Error('the closing write failed');
          }),
        ).rejects.toThrow('the closing write failed');
        expect(await store.claims.claim({ ...where, owner: 'c', now: 1_200, ttlMs: TTL })).toEqual({ claimed: false, owner: 'b' });
      });

      it('gives exactly one of many simultaneous claimants the conversation', async () => {
        const where = conversation();
        const owners = Array.from({ length: 6 }, (_, index) => `racer-${index}`);
        const results = await Promise.all(owners.map((owner) => store.claims.claim({ ...where, owner, now: 5_000, ttlMs: TTL })));
        expect(results.filter((result) => result.claimed)).toHaveLength(1);
      });
    });

    describe('approvals', () => {
      const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      const HOUR = 3_600_000;

      /** A request for one call of a turn in `session`, asked at `requestedAt` and open for an hour. */
      const requestOf = (session: Session, extra: { turnId?: string; callId?: string; summary?: string; requestedAt?: number; expiresAt?: number } = {}) => {
        const requestedAt = extra.requestedAt ?? Date.now();
        return {
          id: unique('approval'),
          modelCalls: 0,
          turnId: extra.turnId ?? unique('turn'),
          callId: extra.callId ?? unique('call'),
          sessionId: session.id,
          userId: session.userId,
          channel: session.channel,
          conversationId: session.conversationId,
          accountId: 'acct',
          accountNamespace: session.channel,
          conversationKind: 'direct' as const,
          tool: 'cancel_booking',
          arguments: '{"booking":"B-7"}',
          summary: extra.summary ?? 'Cancel booking B-7 on Friday',
          by: 'person' as const,
          language: 'uk',
          requestedAt: new Date(requestedAt),
          expiresAt: new Date(extra.expiresAt ?? requestedAt + HOUR),
        };
      };

      /** A message of the session accepted on `channel`, leased to `owner` for `leaseMs`; resolves its id. */
      async function givenMessage(session: Session, channel: string, textOf: string, lease: { owner?: string; leaseMs?: number } = {}): Promise<string> {
        const accepted = await store.inbound.accept(
          {
            channel,
            conversationId: session.conversationId,
            accountId: 'acct',
            userId: session.userId,
            sessionId: session.id,
            text: textOf,
            messageId: unique('msg'),
            dedupeKey: null,
            correlationId: unique('corr'),
            languageHint: 'uk',
            displayName: null,
            conversationKind: 'direct',
          },
          { owner: lease.owner ?? 'dead', leaseMs: lease.leaseMs ?? 1 },
        );
        if (!accepted.accepted) throw new Error('not accepted');
        return accepted.record.id;
      }

      const taken = (channel: string, sessionId?: string) =>
        store.inbound
          .claimExpired({ owner: unique('heir'), leaseMs: 60_000, channels: [channel], limit: 10, ...(sessionId === undefined ? {} : { sessionId }) })
          .then((records) => records.map((record) => record.text));

      const pausedClaim = async (session: Session) => {
        const outcome = await store.claims.claim({
          channel: session.channel,
          conversationId: session.conversationId,
          owner: 'claimer',
          now: Date.now(),
          ttlMs: 1,
          pausedSession: session.id,
        });
        return outcome.claimed ? outcome.paused : 'refused';
      };

      it('records a pending request once per call of a turn, and finds it by id, turn and session', async () => {
        const session = await givenSession();
        const first = requestOf(session);
        const stored = await store.approvals.request(first);
        expect(stored).toMatchObject({
          turnId: first.turnId,
          callId: first.callId,
          sessionId: session.id,
          userId: session.userId,
          tool: 'cancel_booking',
          arguments: '{"booking":"B-7"}',
          summary: 'Cancel booking B-7 on Friday',
          by: 'person',
          language: 'uk',
          conversationKind: 'direct',
          status: 'pending',
          askedAgain: false,
          decidedAt: null,
          decidedBy: null,
          reason: null,
        });
        expect(stored.requestedAt.getTime()).toBe(first.requestedAt.getTime());
        expect(stored.expiresAt.getTime()).toBe(first.expiresAt.getTime());
        // Asked again for the same call (a resumed turn): the first request comes back, as it was.
        const again = await store.approvals.request({
          ...first,
          id: unique('approval'),
          summary: 'Something else',
          requestedAt: new Date(first.requestedAt.getTime() + 5),
        });
        expect(again).toEqual(stored);
        expect(await store.approvals.get(stored.id)).toEqual(stored);
        expect(await store.approvals.get(randomUUID())).toBeUndefined();
        // A second call of the same turn is a request of its own.
        const second = await store.approvals.request({
          ...first,
          id: unique('approval'),
          callId: unique('call'),
          requestedAt: new Date(first.requestedAt.getTime() + 10),
        });
        expect(second.id).not.toBe(stored.id);
        expect((await store.approvals.forTurn(first.turnId)).map((approval) => approval.id)).toEqual([stored.id, second.id]);
        expect(await store.approvals.forTurn(unique('turn'))).toEqual([]);
        expect((await store.approvals.pendingFor(session.id))?.id).toBe(stored.id);
        await store.approvals.decide(stored.id, { status: 'approved', by: `user:${session.userId}`, reason: null, now: Date.now() });
        expect((await store.approvals.pendingFor(session.id))?.id).toBe(second.id);
        expect(await store.approvals.pendingFor((await givenSession()).id)).toBeUndefined();
      });

      it("holds the session's messages while a request waits, and lets them go only once none of its requests does", async () => {
        const channel = unique('chan');
        const session = await givenSession();
        const other = await givenSession();
        const live = await givenMessage(session, channel, 'live', { owner: 'a', leaseMs: 60_000 });
        await givenMessage(session, channel, 'orphan');
        expect(await pausedClaim(session)).toBe(false);

        const first = await store.approvals.request(requestOf(session));
        const second = await store.approvals.request(requestOf(session, { turnId: first.turnId }));
        await givenMessage(other, channel, 'elsewhere');
        // Held like a pause: the live lease goes, and no taker gets any of them, even asking for the session.
        expect(await store.inbound.hold([live])).toBe(1);
        await pause(5); // the 1 ms leases run out
        expect(await taken(channel)).toEqual(['elsewhere']);
        expect(await taken(channel, session.id)).toEqual([]);
        expect(await pausedClaim(session)).toBe(true);

        // One decided, the other still waits: still held.
        expect(await store.approvals.decide(first.id, { status: 'approved', by: 'user:x', reason: null, now: Date.now() })).toBe(true);
        await store.approvals.release(session.id);
        expect(await taken(channel, session.id)).toEqual([]);
        expect(await pausedClaim(session)).toBe(true);

        expect(await store.approvals.decide(second.id, { status: 'declined', by: 'user:x', reason: null, now: Date.now() })).toBe(true);
        await store.approvals.release(session.id);
        expect(await pausedClaim(session)).toBe(false);
        expect(await store.inbound.hold([await givenMessage(session, channel, 'after', { owner: 'a', leaseMs: 60_000 })])).toBe(0);
        expect(await taken(channel, session.id)).toEqual(['live', 'orphan']);

        // The same call asked for again once decided (a resumed turn): the decision comes back, and nothing is held.
        expect(await store.approvals.request(requestOf(session, { turnId: first.turnId, callId: first.callId }))).toMatchObject({
          id: first.id,
          status: 'approved',
        });
        expect(await pausedClaim(session)).toBe(false);
        await givenMessage(session, channel, 'later');
        await pause(5);
        expect(await taken(channel, session.id)).toEqual(['later']);
      });

      it("keeps an operator's pause when the last request is decided", async () => {
        const channel = unique('chan');
        const session = await givenSession();
        const request = await store.approvals.request(requestOf(session));
        await store.sessions.setPaused(session.id, true);
        await store.approvals.decide(request.id, { status: 'declined', by: 'operator:olena', reason: 'no', now: Date.now() });
        await store.approvals.release(session.id);
        await givenMessage(session, channel, 'still paused');
        await pause(5);
        expect(await taken(channel, session.id)).toEqual([]);
        expect(await pausedClaim(session)).toBe(true);
      });

      it('lets exactly one of two decisions taken at once through, in transactions of their own', async () => {
        const session = await givenSession();
        for (const [a, b] of [
          ['approved', 'declined'],
          ['approved', 'approved'],
        ] as const) {
          const request = await store.approvals.request(requestOf(session));
          const now = Date.now();
          const results = await Promise.all([
            store.transaction((tx) => tx.approvals.decide(request.id, { status: a, by: 'user:first', reason: null, now })),
            store.transaction((tx) => tx.approvals.decide(request.id, { status: b, by: 'operator:second', reason: 'checked', now })),
          ]);
          expect(results.filter(Boolean)).toHaveLength(1);
          const decided = await store.approvals.get(request.id);
          expect(decided).toMatchObject(
            results[0] ? { status: a, decidedBy: 'user:first', reason: null } : { status: b, decidedBy: 'operator:second', reason: 'checked' },
          );
          expect(decided?.decidedAt?.getTime()).toBe(now);
          // Decided: nothing changes it any more.
          expect(await store.approvals.decide(request.id, { status: 'declined', by: 'user:late', reason: null, now: now + 1 })).toBe(false);
          expect(await store.approvals.decide(request.id, { status: 'expired', by: 'expiry', reason: null, now: now + 2 * HOUR })).toBe(false);
          expect((await store.approvals.get(request.id))?.decidedBy).toBe(decided?.decidedBy);
        }
        expect(await store.approvals.decide(randomUUID(), { status: 'approved', by: 'user:x', reason: null, now: Date.now() })).toBe(false);
      });

      it("lifts the hold when a session's two requests are decided at once, each in its own transaction", async () => {
        const channel = unique('chan');
        const session = await givenSession();
        const turnId = unique('turn');
        const requests = [await store.approvals.request(requestOf(session, { turnId })), await store.approvals.request(requestOf(session, { turnId }))];
        await givenMessage(session, channel, 'waiting');
        // Both decide before either releases (where the back end runs them side by side; SQLite runs one after the other).
        let arrived = 0;
        let allArrived: () => void = () => {};
        const together = new Promise<void>((resolve) => {
          allArrived = resolve;
        });
        const meet = () => {
          arrived += 1;
          if (arrived === requests.length) allArrived();
          return Promise.race([together, pause(300)]);
        };
        const results = await Promise.all(
          requests.map((request) =>
            store.transaction(async (tx) => {
              const decided = await tx.approvals.decide(request.id, { status: 'approved', by: 'user:x', reason: null, now: Date.now() });
              await meet();
              await tx.approvals.release(session.id);
              return decided;
            }),
          ),
        );
        expect(results).toEqual([true, true]);
        expect(await store.approvals.pendingFor(session.id)).toBeUndefined();
        expect(await pausedClaim(session)).toBe(false);
        expect(await taken(channel, session.id)).toEqual(['waiting']);
      });

      it('takes a yes or no only before the request expires, and the expiry only from then on', async () => {
        const session = await givenSession();
        const expiresAt = Date.now() + HOUR;
        const late = await store.approvals.request(requestOf(session, { expiresAt }));
        const decide = (id: string, status: 'approved' | 'declined' | 'expired', now: number) =>
          store.approvals.decide(id, { status, by: 'user:x', reason: null, now });
        expect(await decide(late.id, 'expired', expiresAt - 1)).toBe(false);
        expect(await decide(late.id, 'approved', expiresAt)).toBe(false);
        expect(await decide(late.id, 'declined', expiresAt + 1)).toBe(false);
        expect((await store.approvals.get(late.id))?.status).toBe('pending');
        expect(await decide(late.id, 'expired', expiresAt)).toBe(true);
        expect((await store.approvals.get(late.id))?.status).toBe('expired');

        const inTime = await store.approvals.request(requestOf(session, { expiresAt }));
        expect(await decide(inTime.id, 'declined', expiresAt - 1)).toBe(true);
        expect(await decide(inTime.id, 'expired', expiresAt)).toBe(false);
        expect((await store.approvals.get(inTime.id))?.status).toBe('declined');
      });

      it('asks again once only, and not once decided', async () => {
        const session = await givenSession();
        const request = await store.approvals.request(requestOf(session));
        expect(await store.approvals.askAgain(request.id)).toBe(true);
        expect((await store.approvals.get(request.id))?.askedAgain).toBe(true);
        expect(await store.approvals.askAgain(request.id)).toBe(false);
        const decided = await store.approvals.request(requestOf(session));
        await store.approvals.decide(decided.id, { status: 'declined', by: 'user:x', reason: null, now: Date.now() });
        expect(await store.approvals.askAgain(decided.id)).toBe(false);
        expect((await store.approvals.get(decided.id))?.askedAgain).toBe(false);
      });

      it('lists the requests whose time ran out, oldest first, pending ones only', async () => {
        const session = await givenSession();
        const now = Date.now();
        const older = await store.approvals.request(requestOf(session, { requestedAt: now - 3 * HOUR, expiresAt: now - 2 * HOUR }));
        const newer = await store.approvals.request(requestOf(session, { requestedAt: now - 2 * HOUR, expiresAt: now - HOUR }));
        const decided = await store.approvals.request(requestOf(session, { requestedAt: now - 3 * HOUR, expiresAt: now - HOUR }));
        await store.approvals.decide(decided.id, { status: 'expired', by: 'expiry', reason: null, now });
        const open = await store.approvals.request(requestOf(session, { requestedAt: now, expiresAt: now + HOUR }));
        const mine = new Set([older.id, newer.id, decided.id, open.id]);
        const expired = (await store.approvals.listExpired(now, 1_000)).filter((approval) => mine.has(approval.id));
        expect(expired.map((approval) => approval.id)).toEqual([older.id, newer.id]);
        expect((await store.approvals.listExpired(now - 2 * HOUR, 1_000)).filter((approval) => mine.has(approval.id)).map((approval) => approval.id)).toEqual([
          older.id,
        ]);
      });

      it('lists requests newest first, those of one status if asked', async () => {
        const session = await givenSession();
        // Far in the future: newer than any other test's requests in a shared database.
        const base = Date.now() + 1_000 * 24 * HOUR;
        const made: ToolApproval[] = [];
        for (let index = 0; index < 4; index++) made.push(await store.approvals.request(requestOf(session, { requestedAt: base + index * 1_000 })));
        await store.approvals.decide(made[0]!.id, { status: 'declined', by: 'user:x', reason: null, now: Date.now() });
        await store.approvals.decide(made[2]!.id, { status: 'declined', by: 'user:x', reason: null, now: Date.now() });
        expect((await store.approvals.list({ limit: 3 })).map((approval) => approval.id)).toEqual([made[3]!.id, made[2]!.id, made[1]!.id]);
        expect((await store.approvals.list({ status: 'declined', limit: 2 })).map((approval) => approval.id)).toEqual([made[2]!.id, made[0]!.id]);
        expect((await store.approvals.list({ status: 'pending', limit: 2 })).map((approval) => [approval.id, approval.status])).toEqual([
          [made[3]!.id, 'pending'],
          [made[1]!.id, 'pending'],
        ]);
      });
    });

    describe('turns waiting for an approval', () => {
      it("adds the answer to an open turn's batch, after its messages", async () => {
        const session = await givenSession();
        const accept = async (content: string) => {
          const accepted = await store.inbound.accept(
            {
              channel: 'console',
              conversationId: session.conversationId,
              accountId: 'acct',
              userId: session.userId,
              sessionId: session.id,
              text: content,
              messageId: null,
              dedupeKey: null,
              correlationId: unique('corr'),
              languageHint: null,
              displayName: null,
              conversationKind: 'direct',
            },
            { owner: 'a', leaseMs: 60_000 },
          );
          return accepted.accepted ? accepted.record.id : '';
        };
        const [first, second, answer] = [await accept('cancel Friday'), await accept('please'), await accept('yes')];
        const turnId = unique('turn');
        await store.turns.open({ id: turnId, sessionId: session.id, owner: 'a', inboundIds: [first, second] });
        expect((await store.turns.lookup([answer])).open).toBeUndefined();
        await store.turns.attach(turnId, answer);
        const expected = { id: turnId, sessionId: session.id, owner: 'a', inboundIds: [first, second, answer] };
        expect(await store.turns.lookup([answer])).toEqual({ queued: new Set([answer]), open: expected });
        expect((await store.turns.lookup([first, answer])).open).toEqual(expected);
        // A message already in a turn cannot join another.
        const another = unique('turn');
        await store.turns.open({ id: another, sessionId: session.id, owner: 'a', inboundIds: [await accept('other')] });
        await expectStoreError(store.turns.attach(another, answer), 'conflict');
        expect((await store.turns.lookup([answer])).open).toEqual(expected);
      });
    });

    describe('outbox questions', () => {
      it('keeps the approval a question part asks, and hands it back with the part after a crash', async () => {
        const channel = unique('chan');
        const session = await givenSession();
        const replyMessageId = unique('reply');
        const approval = { id: unique('approval'), expiresAt: '2031-05-01T10:00:00.000Z' };
        const base = {
          sessionId: session.id,
          replyMessageId,
          channel,
          conversationId: 'conv',
          accountId: 'acct',
          inReplyTo: ['9'],
          correlationId: unique('corr'),
        };
        const added = await store.deliveries.add(
          [
            { ...base, part: 0, text: 'Looking.' },
            { ...base, part: 1, text: 'Cancel booking B-7 on Friday?', approval },
          ],
          { owner: 'dead', leaseMs: 1 },
        );
        expect(added.map((part) => part.approval)).toEqual([null, approval]);
        await store.deliveries.markSent(added[0]!.id, 'tg-1');
        await new Promise((resolve) => setTimeout(resolve, 5));
        const claimed = await store.deliveries.claimExpired({ owner: 'heir', leaseMs: 60_000, channels: [channel], limit: 10 });
        expect(claimed.map((part) => [part.text, part.approval])).toEqual([['Cancel booking B-7 on Friday?', approval]]);
        expect((await store.deliveries.listForReply(replyMessageId)).map((part) => part.approval)).toEqual([null, approval]);
      });
    });

    describe('processes', () => {
      it('registers processes, and retiring a dead one frees its messages, outbox parts and claims at once', async () => {
        const dead = unique('proc');
        await store.processes.register({ id: dead, host: 'box', pid: 41, startedAt: 1_000, heartbeatAt: 1_000 });
        expect((await store.processes.list()).find((record) => record.id === dead)).toEqual({
          id: dead,
          host: 'box',
          pid: 41,
          startedAt: 1_000,
          heartbeatAt: 1_000,
        });
        const session = await givenSession();
        const accepted = await store.inbound.accept(
          {
            channel: 'console',
            conversationId: session.conversationId,
            accountId: 'acct',
            userId: session.userId,
            sessionId: session.id,
            text: 'hi',
            messageId: null,
            dedupeKey: null,
            correlationId: unique('c'),
            languageHint: null,
            displayName: null,
            conversationKind: 'direct',
          },
          { owner: dead, leaseMs: 3_600_000 },
        );
        const where = { channel: 'console', conversationId: session.conversationId };
        await store.claims.claim({ ...where, owner: dead, now: Date.now(), ttlMs: 3_600_000 });
        expect(await store.inbound.claimExpired({ owner: 'next', leaseMs: 2_500, channels: ['console'], limit: 100, sessionId: session.id })).toEqual([]);

        expect(await store.processes.retire(dead)).toBe(1);
        const taken = await store.inbound.claimExpired({ owner: 'next', leaseMs: 2_500, channels: ['console'], limit: 100, sessionId: session.id });
        expect(taken.map((record) => record.id)).toEqual([accepted.accepted ? accepted.record.id : '']);
        expect(await store.claims.claim({ ...where, owner: 'next', now: Date.now(), ttlMs: 2_500 })).toMatchObject({ claimed: true, previousOwner: dead });
        expect((await store.processes.list()).some((record) => record.id === dead)).toBe(false);
      });

      it('stamps a heartbeat and forgets processes silent for long', async () => {
        const id = unique('proc');
        await store.processes.register({ id, host: 'box', pid: 7, startedAt: 1_000, heartbeatAt: 1_000 });
        await store.processes.heartbeat(id, 5_000);
        expect((await store.processes.list()).find((record) => record.id === id)?.heartbeatAt).toBe(5_000);
        expect(await store.processes.forgetSilentSince(5_000)).toBeGreaterThanOrEqual(0);
        expect((await store.processes.list()).some((record) => record.id === id)).toBe(true);
        await store.processes.forgetSilentSince(5_001);
        expect((await store.processes.list()).some((record) => record.id === id)).toBe(false);
      });
    });

    describe('transactions', () => {
      it('commits the writes of a transaction together', async () => {
        const session = await givenSession();
        const result = await store.transaction(async (tx) => {
          await tx.messages.append(session.id, [text('q'), text('a', { role: 'assistant' })]);
          await tx.sessions.addUsage(session.id, { inputTokens: 5, outputTokens: 6, cost: '0.01', currency: 'USD' });
          await tx.userState.save(session.userId, { done: true });
          return 'ok';
        });
        expect(result).toBe('ok');
        expect(await store.messages.listRecent(session.id, { limit: 10 })).toHaveLength(2);
        expect(await store.sessions.findById(session.id)).toMatchObject({ inputTokens: 5, cost: '0.01' });
        expect(await store.userState.get(session.userId)).toMatchObject({ version: 1 });
      });

      it('a failed transaction writes nothing', async () => {
        const session = await givenSession();
        await store.messages.append(session.id, [text('before')]);
        const boom = new Error('boom');
        await expect(
          store.transaction(async (tx) => {
            await tx.messages.append(session.id, [text('lost 1'), text('lost 2')]);
            await tx.sessions.addUsage(session.id, { inputTokens: 5, outputTokens: 6, cost: '0.01', currency: 'USD' });
            await tx.toolCalls.start({ callId: unique('call'), sessionId: session.id, userId: session.userId, correlationId: 'c', name: 't', arguments: '{}' });
            throw boom;
          }),
        ).rejects.toBe(boom);
        expect((await store.messages.listRecent(session.id, { limit: 10 })).map((m) => m.content)).toEqual(['before']);
        expect(await store.sessions.findById(session.id)).toMatchObject({ inputTokens: 0, cost: '0' });
        expect(await store.toolCalls.listBySession(session.id)).toEqual([]);
        // The rolled-back seqs are handed out again: no gap.
        expect((await store.messages.append(session.id, [text('after')]))[0]?.seq).toBe(2);
      });

      it('nested transactions reuse the outer one', async () => {
        const session = await givenSession();
        await expect(
          store.transaction(async (outer) =>
            outer.transaction(async (inner) => {
              expect(inner).toBe(outer);
              await inner.messages.append(session.id, [text('inner')]);
              throw new Error('inner failure rolls back the outer transaction');
            }),
          ),
        ).rejects.toThrow('inner failure');
        expect(await store.messages.listRecent(session.id, { limit: 10 })).toEqual([]);
      });

      it('creates a user inside a transaction', async () => {
        const accountId = unique('tg');
        const { user } = await store.transaction((tx) => tx.users.resolveAccount({ channel: 'telegram', accountId }));
        expect((await store.users.resolveAccount({ channel: 'telegram', accountId })).user.id).toBe(user.id);
      });
    });

    describe('life cycle', () => {
      it('answers a ping', async () => {
        await expect(store.ping()).resolves.toBeUndefined();
      });

      it('can be closed twice', async () => {
        await store.close();
        await store.close();
      });
    });
  });
}
