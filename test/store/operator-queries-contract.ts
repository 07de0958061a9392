import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/domain/errors.js';
import type { NewMessage, Session, User } from '../../src/domain/model.js';
import type { Store } from '../../src/domain/ports/store.js';
import type { MakeStore } from './store-contract.js';

/**
 * The operators' read model (`Store.operators`) on every adapter. Tests never assume an empty database (PostgreSQL
 * shares one across the file): each scopes its queries to names, users or sessions of its own.
 */
export function runOperatorQueriesContract(name: string, makeStore: MakeStore): void {
  describe(`${name} operator queries`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await makeStore());
    });

    afterEach(async () => {
      await cleanup();
    });

    const unique = (prefix: string): string => `${prefix}-${randomUUID()}`;

    async function givenUser(displayName: string | null, accountId = unique('acct'), channel = 'telegram'): Promise<User> {
      return (await store.users.resolveAccount({ channel, accountId, displayName })).user;
    }

    async function givenSession(user: User, channel = 'telegram', conversationId = unique('conv')): Promise<Session> {
      return store.sessions.open({ userId: user.id, channel, conversationId });
    }

    const reply = (
      content: string,
      usage: { model?: string; input?: number; output?: number; cached?: number; cost: string; currency?: string },
    ): NewMessage => ({
      role: 'assistant',
      audience: 'display',
      content,
      model: usage.model ?? 'gpt-a',
      inputTokens: usage.input ?? 10,
      outputTokens: usage.output ?? 5,
      cachedInputTokens: usage.cached ?? 0,
      cost: usage.cost,
      currency: usage.currency ?? 'USD',
    });

    async function accept(session: Session, text = 'waiting', leaseMs = 60_000) {
      const accepted = await store.inbound.accept(
        {
          channel: session.channel,
          conversationId: session.conversationId,
          accountId: 'acct',
          userId: session.userId,
          sessionId: session.id,
          text,
          messageId: unique('msg'),
          dedupeKey: null,
          correlationId: unique('corr'),
          languageHint: 'en',
          displayName: null,
          conversationKind: 'direct',
        },
        { owner: 'process-a', leaseMs },
      );
      if (!accepted.accepted) throw new Error('not accepted');
      return accepted.record;
    }

    async function expectInvalidCursor(promise: Promise<unknown>): Promise<void> {
      const error = await promise.then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).code).toBe('invalid_cursor');
    }

    describe('users', () => {
      it('finds a user by a part of the name, the phone digits however typed, and an account id', async () => {
        const tag = unique('Zoe');
        const user = await givenUser(`${tag} Kovalenko`, unique('tg-acct'));
        const phone = `38067${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
        await store.users.setPhone(user.id, phone);
        const [account] = await store.users.listAccounts(user.id);

        const ids = async (q: string) => (await store.operators.users({ q, limit: 50 })).items.map((item) => item.id);
        expect(await ids(tag.toUpperCase().slice(0, 20) + tag.slice(20))).toContain(user.id);
        expect(await ids(`+${phone.slice(0, 3)} ${phone.slice(3, 5)}-${phone.slice(5)}`)).toEqual([user.id]);
        expect(await ids(account!.accountId)).toEqual([user.id]);
        expect(await ids(`${tag}%`)).toEqual([]);
        const [found] = (await store.operators.users({ q: tag, limit: 50 })).items;
        expect(found).toMatchObject({
          id: user.id,
          displayName: `${tag} Kovalenko`,
          phone,
          accounts: [{ channel: 'telegram', accountId: account!.accountId }],
          conversations: 0,
          costs: [],
          lastActiveAt: null,
        });
      });

      it('takes the search text literally, the LIKE escape character included', async () => {
        const tag = unique('esc');
        const user = await givenUser(`${tag} Ann!_X`, unique('tg-acct'));
        const ids = async (q: string) => (await store.operators.users({ q, limit: 50 })).items.map((item) => item.id);
        expect(await ids(`${tag} ann!_x`)).toEqual([user.id]);
        expect(await ids(`${tag} ann!!x`)).toEqual([]);
        expect(await ids(`${tag} ann!x`)).toEqual([]);
      });

      it('pages newest first without gaps or duplicates, and refuses a cursor it did not hand out', async () => {
        const tag = unique('pager');
        const created: string[] = [];
        for (let i = 0; i < 5; i += 1) created.push((await givenUser(`${tag} ${i}`)).id);
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await store.operators.users({ q: tag, limit: 2, cursor });
          seen.push(...page.items.map((item) => item.id));
          cursor = page.nextCursor ?? undefined;
          pages += 1;
        } while (cursor !== undefined);
        expect(pages).toBe(3);
        expect(seen).toEqual((await store.operators.users({ q: tag, limit: 50 })).items.map((item) => item.id));
        expect([...seen].sort()).toEqual([...created].sort());
        await expectInvalidCursor(store.operators.users({ limit: 2, cursor: 'not-a-cursor' }));
      });

      it('sums what their conversations cost exactly, per currency, the latest conversation’s first', async () => {
        const tag = unique('spender');
        const user = await givenUser(tag);
        const first = await givenSession(user);
        const second = await givenSession(user);
        await store.sessions.addUsage(first.id, { inputTokens: 1, outputTokens: 1, cost: '0.1', currency: 'USD' });
        await store.sessions.addUsage(second.id, { inputTokens: 1, outputTokens: 1, cost: '0.2', currency: 'USD' });
        await store.sessions.addUsage(first.id, { inputTokens: 1, outputTokens: 1, cost: '1234567890.9999999999', currency: 'USD' });
        const euros = await givenSession(user);
        await store.sessions.addUsage(euros.id, { inputTokens: 1, outputTokens: 1, cost: '0.0000000001', currency: 'EUR' });

        const [found] = (await store.operators.users({ q: tag, limit: 5 })).items;
        expect(found?.conversations).toBe(3);
        expect(found?.costs).toEqual([
          { currency: 'EUR', cost: '0.0000000001' },
          { currency: 'USD', cost: '1234567891.2999999999' },
        ]);
        expect(found?.lastActiveAt).toBeInstanceOf(Date);
      });
    });

    describe('conversations', () => {
      it('lists a user’s conversations with the last message, waiting messages and cost, filtered', async () => {
        const tag = unique('Olena');
        const user = await givenUser(tag);
        const web = await givenSession(user, 'web');
        const telegram = await givenSession(user, 'telegram');
        await store.messages.append(
          telegram.id,
          [
            { role: 'user', audience: 'display', content: 'What time is it?' },
            { role: 'tool', audience: 'audit', content: '10:30' },
            reply(`It is 10:30. ${'x'.repeat(400)}`, { cost: '0.00015' }),
            { role: 'assistant', audience: 'audit', content: '{"stage":"organization"}' },
          ],
          { status: 'completed', usage: { inputTokens: 10, outputTokens: 5, cost: '0.00015', currency: 'USD' } },
        );
        await accept(telegram, 'and now?');
        await store.sessions.setTitle(web.id, `Title ${tag}`);

        const all = (await store.operators.conversations({ userId: user.id, limit: 10 })).items;
        expect(all.map((item) => item.sessionId).sort()).toEqual([web.id, telegram.id].sort());
        const found = all.find((item) => item.sessionId === telegram.id)!;
        expect(found).toMatchObject({
          channel: 'telegram',
          conversationId: telegram.conversationId,
          user: { id: user.id, displayName: tag },
          status: 'completed',
          pausedAt: null,
          endedAt: null,
          waiting: 1,
          cost: '0.00015',
          currency: 'USD',
          inputTokens: 10,
          outputTokens: 5,
        });
        expect(found.lastMessage?.role).toBe('assistant');
        expect(found.lastMessage?.text).toHaveLength(280);
        expect(found.lastMessage?.text.startsWith('It is 10:30.')).toBe(true);
        expect(all.find((item) => item.sessionId === web.id)).toMatchObject({ lastMessage: null, waiting: 0, cost: '0', status: 'pending' });

        const ids = async (query: Parameters<Store['operators']['conversations']>[0]) =>
          (await store.operators.conversations(query)).items.map((item) => item.sessionId);
        expect(await ids({ userId: user.id, channel: 'web', limit: 10 })).toEqual([web.id]);
        expect(await ids({ userId: user.id, status: 'completed', limit: 10 })).toEqual([telegram.id]);
        expect(await ids({ userId: user.id, paused: false, limit: 10 })).toHaveLength(2);
        expect(await ids({ userId: user.id, paused: true, limit: 10 })).toEqual([]);
        expect(await ids({ q: `title ${tag}`.toUpperCase(), limit: 10 })).toEqual([web.id]);
        expect(await ids({ q: telegram.conversationId, limit: 10 })).toEqual([telegram.id]);
        expect((await ids({ q: tag, limit: 10 })).sort()).toEqual([web.id, telegram.id].sort());
        expect(await store.operators.conversation(telegram.id)).toEqual(found);
        expect(await store.operators.conversation(randomUUID())).toBeUndefined();
      });

      it('shows who took a conversation and its open handoff, until it closes', async () => {
        const user = await givenUser(unique('handed'));
        const session = await givenSession(user);
        const other = await givenSession(user);
        expect(await store.operators.conversation(session.id)).toMatchObject({ assignedTo: null, handoff: null });
        await store.handoffs.open({ sessionId: session.id, userId: user.id, reason: 'asks for a person', source: 'model', at: 5_000 });
        await store.sessions.assign(session.id, 'Olena');
        await store.handoffs.take(session.id, 'Olena', 6_000);
        const listed = (await store.operators.conversations({ userId: user.id, limit: 10 })).items;
        expect(listed.find((item) => item.sessionId === session.id)).toMatchObject({
          assignedTo: 'Olena',
          handoff: { reason: 'asks for a person', source: 'model', requestedAt: new Date(5_000), takenBy: 'Olena' },
        });
        expect(listed.find((item) => item.sessionId === other.id)).toMatchObject({ assignedTo: null, handoff: null });
        await store.handoffs.close(session.id, 'Olena', 7_000);
        expect(await store.operators.conversation(session.id)).toMatchObject({ assignedTo: 'Olena', handoff: null });
      });

      it('pages most recently active first without gaps or duplicates', async () => {
        const user = await givenUser(unique('pager'));
        const sessions: string[] = [];
        for (let i = 0; i < 5; i += 1) sessions.push((await givenSession(user)).id);
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.operators.conversations({ userId: user.id, limit: 2, cursor });
          expect(page.items.length).toBeLessThanOrEqual(2);
          seen.push(...page.items.map((item) => item.sessionId));
          cursor = page.nextCursor ?? undefined;
        } while (cursor !== undefined);
        expect(seen).toEqual((await store.operators.conversations({ userId: user.id, limit: 50 })).items.map((item) => item.sessionId));
        expect([...seen].sort()).toEqual([...sessions].sort());
        const times = (await store.operators.conversations({ userId: user.id, limit: 50 })).items.map((item) => item.updatedAt.getTime());
        expect(times).toEqual([...times].sort((a, b) => b - a));
        await expectInvalidCursor(store.operators.conversations({ limit: 2, cursor: Buffer.from('["x",1]').toString('base64url') }));
      });
    });

    describe('transcript', () => {
      it('shows display messages, adds audit records on request, and keeps the last ones under a limit', async () => {
        const session = await givenSession(await givenUser('Ada'));
        await store.messages.append(session.id, [
          { role: 'user', audience: 'display', content: 'one' },
          {
            role: 'tool',
            audience: 'audit',
            content: 'result',
            toolCalls: [{ callId: 'c1', name: 'lookup', arguments: '{"q":1}' }],
            toolCallId: 'c1',
            meta: { isError: false, durationMs: 12 },
          },
          reply('two', { cost: '0.5' }),
          { role: 'user', audience: 'display', content: 'three' },
        ]);
        const display = await store.operators.transcript(session.id, { audit: false, limit: 10 });
        expect(display.map((message) => message.content)).toEqual(['one', 'two', 'three']);
        expect(display.map((message) => message.seq)).toEqual([1, 3, 4]);
        expect(display[1]).toMatchObject({ role: 'assistant', model: 'gpt-a', cost: '0.5' });
        const audit = await store.operators.transcript(session.id, { audit: true, limit: 10 });
        expect(audit.map((message) => message.content)).toEqual(['one', 'result', 'two', 'three']);
        expect(audit[1]).toMatchObject({
          audience: 'audit',
          toolCalls: [{ callId: 'c1', name: 'lookup', arguments: '{"q":1}' }],
          meta: { isError: false, durationMs: 12 },
        });
        expect((await store.operators.transcript(session.id, { audit: true, limit: 2 })).map((message) => message.content)).toEqual(['two', 'three']);
        expect(await store.operators.transcript(randomUUID(), { audit: true, limit: 2 })).toEqual([]);
      });
    });

    describe('costs', () => {
      it('sums replies exactly per conversation, user and UTC day, per currency, with tokens by model', async () => {
        const alice = await givenUser(unique('Alice'));
        const bob = await givenUser(unique('Bob'));
        const a1 = await givenSession(alice);
        const a2 = await givenSession(alice);
        const a3 = await givenSession(alice);
        const b1 = await givenSession(bob);
        const [first] = await store.messages.append(a1.id, [
          reply('r1', { model: 'gpt-a', input: 100, output: 20, cached: 40, cost: '0.1' }),
          reply('r2', { model: 'gpt-b', input: 7, output: 3, cost: '0.2' }),
          { role: 'user', audience: 'display', content: 'no cost here' },
          { role: 'assistant', audience: 'audit', content: '{}', model: 'gpt-a' },
        ]);
        await store.messages.append(a2.id, [reply('r3', { model: 'gpt-a', input: 1, output: 1, cost: '0.0000000001' })]);
        // A session holds one currency; the user's next one may hold another.
        await store.messages.append(a3.id, [reply('r4', { model: 'gpt-a', cost: '3', currency: 'EUR' })]);
        await store.messages.append(b1.id, [reply('r5', { cost: '9.99' })]);

        const byConversation = await store.operators.costs({ by: 'conversation', userId: alice.id, limit: 10 });
        expect(byConversation.rows).toEqual([
          {
            key: a3.id,
            label: null,
            currency: 'EUR',
            cost: '3',
            inputTokens: 10,
            outputTokens: 5,
            turns: 1,
            models: [{ model: 'gpt-a', inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, cost: '3' }],
          },
          {
            key: a1.id,
            label: null,
            currency: 'USD',
            cost: '0.3',
            inputTokens: 107,
            outputTokens: 23,
            turns: 2,
            models: [
              { model: 'gpt-a', inputTokens: 100, outputTokens: 20, cachedInputTokens: 40, cost: '0.1' },
              { model: 'gpt-b', inputTokens: 7, outputTokens: 3, cachedInputTokens: 0, cost: '0.2' },
            ],
          },
          {
            key: a2.id,
            label: null,
            currency: 'USD',
            cost: '0.0000000001',
            inputTokens: 1,
            outputTokens: 1,
            turns: 1,
            models: [{ model: 'gpt-a', inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, cost: '0.0000000001' }],
          },
        ]);
        expect(byConversation.totals).toEqual([
          { currency: 'EUR', cost: '3' },
          { currency: 'USD', cost: '0.3000000001' },
        ]);

        const byUser = await store.operators.costs({ by: 'user', userId: alice.id, limit: 10 });
        expect(byUser.rows.map((row) => [row.key, row.label, row.currency, row.cost, row.turns])).toEqual([
          [alice.id, alice.displayName, 'EUR', '3', 1],
          [alice.id, alice.displayName, 'USD', '0.3000000001', 3],
        ]);
        const day = first!.createdAt.toISOString().slice(0, 10);
        const byDay = await store.operators.costs({ by: 'day', sessionId: b1.id, limit: 10 });
        expect(byDay.rows).toMatchObject([{ key: day, currency: 'USD', cost: '9.99', turns: 1 }]);
        expect((await store.operators.costs({ by: 'day', sessionId: b1.id, to: new Date(first!.createdAt.getTime() - 60_000), limit: 10 })).rows).toEqual([]);
        expect(
          (await store.operators.costs({ by: 'day', sessionId: b1.id, from: new Date(first!.createdAt.getTime() - 60_000), limit: 10 })).rows,
        ).toHaveLength(1);
        const limited = await store.operators.costs({ by: 'conversation', userId: alice.id, limit: 1 });
        expect(limited.rows.map((row) => row.key)).toEqual([a3.id]);
        expect(limited.totals).toEqual(byConversation.totals);
      });
    });

    describe('summaries', () => {
      it('lists a conversation’s summary versions newest first, marks the one turns read, and counts their cost', async () => {
        const user = await givenUser(unique('Ann'));
        const session = await givenSession(user);
        const said = await store.messages.append(session.id, [
          { role: 'user', audience: 'display', content: 'remember 4711' },
          reply('noted', { model: 'gpt-a', input: 10, output: 5, cost: '0.1' }),
          { role: 'user', audience: 'display', content: 'and my name is Ann' },
        ]);
        const write = async (toSeq: number, text: string, fromSeq = 0) => {
          const claimId = await store.summaries.claim({ sessionId: session.id, owner: 'a', now: Date.now(), ttlMs: 60_000 });
          const usage = { model: 'summariser', inputTokens: 300, outputTokens: 40, cost: '0.02', currency: 'USD' };
          return store.summaries.add({ sessionId: session.id, fromSeq, toSeq, text, ...usage }, claimId!);
        };
        await write(said[1]!.seq, 'Door code 4711.');
        await write(said[2]!.seq, 'Door code 4711; Ann.');
        const listed = await store.operators.summaries(session.id, 10);
        expect(listed.map((summary) => [summary.version, summary.toSeq, summary.text, summary.current])).toEqual([
          [2, said[2]!.seq, 'Door code 4711; Ann.', true],
          [1, said[1]!.seq, 'Door code 4711.', false],
        ]);
        expect(listed[0]).toMatchObject({ model: 'summariser', inputTokens: 300, outputTokens: 40, cost: '0.02', currency: 'USD', fromSeq: 0 });
        expect((await store.operators.summaries(session.id, 1)).map((summary) => summary.version)).toEqual([2]);
        // After a reset no version is read: they stay listed, none current.
        await store.sessions.resetContext(session.id);
        expect((await store.operators.summaries(session.id, 10)).map((summary) => summary.current)).toEqual([false, false]);
        expect(await store.operators.summaries(randomUUID(), 10)).toEqual([]);

        // The costs report counts the summaries' calls under their model, not as turns.
        const costs = await store.operators.costs({ by: 'conversation', sessionId: session.id, limit: 10 });
        expect(costs.rows).toEqual([
          {
            key: session.id,
            label: null,
            currency: 'USD',
            cost: '0.14',
            inputTokens: 610,
            outputTokens: 85,
            turns: 1,
            models: [
              { model: 'gpt-a', inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, cost: '0.1' },
              { model: 'summariser', inputTokens: 600, outputTokens: 80, cachedInputTokens: 0, cost: '0.04' },
            ],
          },
        ]);
        const byDay = await store.operators.costs({ by: 'day', userId: user.id, limit: 10 });
        expect(byDay.rows).toMatchObject([{ key: said[0]!.createdAt.toISOString().slice(0, 10), cost: '0.14', turns: 1 }]);
      });
    });

    describe('live turns', () => {
      it('counts accepted messages running while a live process holds them or a turn answers them, else waiting', async () => {
        const session = await givenSession(await givenUser('Ada'));
        const before = await store.operators.depth();
        // Its process is gone: the lease has run out.
        const orphan = await accept(session, 'one', 0);
        const leased = await accept(session, 'two');
        const live = async () => (await store.operators.liveTurns()).filter((turn) => turn.sessionId === session.id);
        expect((await live()).sort((a, b) => a.state.localeCompare(b.state))).toEqual([
          {
            sessionId: session.id,
            channel: 'telegram',
            conversationId: session.conversationId,
            userId: session.userId,
            state: 'running',
            messages: 1,
            oldestAt: leased.receivedAt,
          },
          {
            sessionId: session.id,
            channel: 'telegram',
            conversationId: session.conversationId,
            userId: session.userId,
            state: 'waiting',
            messages: 1,
            oldestAt: orphan.receivedAt,
          },
        ]);
        const during = await store.operators.depth();
        expect([during.inbox.waiting - before.inbox.waiting, during.inbox.running - before.inbox.running]).toEqual([1, 1]);

        // A turn that took the orphan over runs it, whatever its lease says.
        await store.turns.open({ id: randomUUID(), sessionId: session.id, owner: 'process-b', inboundIds: [orphan.id] });
        expect((await live()).map((turn) => [turn.state, turn.messages])).toEqual([['running', 2]]);
        // A retry due later: nobody works on it until then.
        await store.inbound.retryLater([leased.id], 60_000);
        expect((await live()).map((turn) => [turn.state, turn.messages]).sort()).toEqual([
          ['running', 1],
          ['waiting', 1],
        ]);
        expect((await store.operators.conversation(session.id))?.waiting).toBe(2);
      });

      it('counts the messages of a paused conversation as paused, and filters conversations by pause', async () => {
        const user = await givenUser('Ada');
        const session = await givenSession(user);
        const other = await givenSession(user);
        await accept(session, 'held');
        expect(await store.sessions.setPaused(session.id, true)).toBe(true);
        expect((await store.operators.liveTurns()).filter((turn) => turn.sessionId === session.id).map((turn) => [turn.state, turn.messages])).toEqual([
          ['paused', 1],
        ]);
        const ids = async (paused: boolean) =>
          (await store.operators.conversations({ userId: user.id, paused, limit: 10 })).items.map((item) => item.sessionId);
        expect(await ids(true)).toEqual([session.id]);
        expect(await ids(false)).toEqual([other.id]);
        expect((await store.operators.conversation(session.id))?.pausedAt).toBeInstanceOf(Date);
        await store.sessions.setPaused(session.id, false);
        expect((await store.operators.liveTurns()).filter((turn) => turn.sessionId === session.id).map((turn) => turn.state)).toEqual(['running']);
        expect(await ids(true)).toEqual([]);
      });

      it('counts outbox parts pending and failed', async () => {
        const session = await givenSession(await givenUser('Ada'));
        const before = await store.operators.depth();
        const replyId = randomUUID();
        await store.messages.append(session.id, [{ id: replyId, ...reply('hi', { cost: '0' }) }]);
        const parts = await store.deliveries.add(
          [0, 1].map((part) => ({
            sessionId: session.id,
            replyMessageId: replyId,
            part,
            text: `part ${part}`,
            channel: 'telegram',
            conversationId: session.conversationId,
            accountId: 'acct',
            inReplyTo: [],
            correlationId: 'corr',
          })),
          { owner: 'process-a', leaseMs: 60_000 },
        );
        await store.deliveries.markFailed(parts[1]!.id, 'blocked');
        const after = await store.operators.depth();
        expect(after.outbox.pending - before.outbox.pending).toBe(1);
        expect(after.outbox.failed - before.outbox.failed).toBe(1);
      });
    });
  });
}
