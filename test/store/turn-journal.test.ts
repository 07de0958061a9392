import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Session } from '../../src/domain/model.js';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/index.js';
import { createTestMariadbDatabase, type TestMariadbDatabase } from '../support/mariadb.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

/** The turn journal's store part, on each dialect: open turns by their messages, take-over, model calls, clean-up. */
function runTurnJournalContract(name: string, open: () => Promise<Store>): void {
  describe(`${name}: turn journal`, () => {
    let store: Store;
    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await store?.close();
    });

    const unique = (prefix: string) => `${prefix}-${randomUUID()}`;

    async function givenSession(): Promise<Session> {
      const { user } = await store.users.resolveAccount({ channel: 'console', accountId: unique('acct') });
      return store.sessions.open({ userId: user.id, channel: 'console', conversationId: unique('conv') });
    }

    async function givenInbound(session: Session, owner: string, leaseMs = 60_000): Promise<string> {
      const accepted = await store.inbound.accept(
        {
          channel: 'console',
          conversationId: session.conversationId,
          accountId: 'acct',
          userId: session.userId,
          sessionId: session.id,
          text: unique('text'),
          messageId: null,
          dedupeKey: null,
          correlationId: unique('corr'),
          languageHint: null,
          displayName: null,
          conversationKind: 'direct',
        },
        { owner, leaseMs },
      );
      if (!accepted.accepted) throw new Error('not accepted');
      return accepted.record.id;
    }

    it('finds the open turn of any of its messages, with all of them in order, and which messages are still queued', async () => {
      const session = await givenSession();
      const [m1, m2, m3] = [await givenInbound(session, 'p1'), await givenInbound(session, 'p1'), await givenInbound(session, 'p1')];
      const turnId = unique('turn');
      expect(await store.turns.lookup([m1, m2, m3])).toEqual({ queued: new Set([m1, m2, m3]), open: undefined });
      await store.turns.open({ id: turnId, sessionId: session.id, owner: 'p1', inboundIds: [m1, m2] });
      expect((await store.turns.lookup([m2, m3])).open).toEqual({ id: turnId, sessionId: session.id, owner: 'p1', inboundIds: [m1, m2] });
      // One open turn per message.
      await expect(store.turns.open({ id: unique('turn'), sessionId: session.id, owner: 'p1', inboundIds: [m2] })).rejects.toThrow();
    });

    it('keeps model calls by their place in the turn, replacing one recorded there again', async () => {
      const session = await givenSession();
      const turnId = unique('turn');
      await store.turns.open({ id: turnId, sessionId: session.id, owner: 'p1', inboundIds: [await givenInbound(session, 'p1')] });
      await store.turns.recordModelCall(turnId, 1, '{"n":"second"}');
      await store.turns.recordModelCall(turnId, 0, '{"n":"first"}');
      await store.turns.recordModelCall(turnId, 1, '{"n":"second, again"}');
      expect(await store.turns.listModelCalls(turnId)).toEqual(['{"n":"first"}', '{"n":"second, again"}']);
    });

    it('forgets the turn, its model calls and its tool calls when it closes, in the transaction of the reply', async () => {
      const session = await givenSession();
      const message = await givenInbound(session, 'p1');
      const turnId = unique('turn');
      await store.turns.open({ id: turnId, sessionId: session.id, owner: 'p1', inboundIds: [message] });
      await store.turns.recordModelCall(turnId, 0, '{}');
      await store.toolCalls.start({
        callId: `${turnId}:call_1`,
        sessionId: session.id,
        userId: session.userId,
        correlationId: 'c',
        name: 'book',
        arguments: '{}',
        turnId,
      });
      expect((await store.toolCalls.listByTurn(turnId)).map((call) => [call.callId, call.turnId])).toEqual([[`${turnId}:call_1`, turnId]]);
      // A rolled-back reply keeps the journal.
      await expect(
        store.transaction(async (tx) => {
          await tx.turns.close(turnId);
          throw new Error('the reply could not be stored');
        }),
      ).rejects.toThrow('the reply could not be stored');
      expect((await store.turns.lookup([message])).open?.id).toBe(turnId);
      await store.transaction((tx) => tx.turns.close(turnId));
      expect(await store.turns.lookup([message])).toEqual({ queued: new Set([message]), open: undefined });
      expect(await store.turns.listModelCalls(turnId)).toEqual([]);
      expect(await store.toolCalls.listByTurn(turnId)).toEqual([]);
    });

    it("hands a dead process's turn to exactly one of two processes that each took over one of its messages, with all its messages", async () => {
      const session = await givenSession();
      const [m1, m2] = [await givenInbound(session, 'dead', 1), await givenInbound(session, 'dead', 1)];
      const turnId = unique('turn');
      await store.turns.open({ id: turnId, sessionId: session.id, owner: 'dead', inboundIds: [m1, m2] });
      await new Promise((resolve) => setTimeout(resolve, 5)); // the 1 ms leases run out
      // Each recovering process claimed one message (a recovery round cut between them).
      const [claimedByB] = await store.inbound.claimExpired({ owner: 'b', leaseMs: 60_000, channels: ['console'], limit: 1 });
      const [claimedByC] = await store.inbound.claimExpired({ owner: 'c', leaseMs: 60_000, channels: ['console'], limit: 1 });
      expect([claimedByB?.id, claimedByC?.id].sort()).toEqual([m1, m2].sort());

      const [b, c] = await Promise.all([
        store.turns.takeOver(turnId, { from: 'dead', owner: 'b', leaseMs: 60_000 }),
        store.turns.takeOver(turnId, { from: 'dead', owner: 'c', leaseMs: 60_000 }),
      ]);
      expect([b, c].filter(Boolean)).toHaveLength(1);
      const winner = b ? 'b' : 'c';
      expect((await store.turns.lookup([m1])).open?.owner).toBe(winner);
      // The loser cannot take it from the winner either: it no longer holds any of its messages.
      expect(await store.turns.takeOver(turnId, { from: winner, owner: winner === 'b' ? 'c' : 'b', leaseMs: 60_000 })).toBe(false);
      // The winner holds every message of the turn: nobody claims them while it lives.
      expect(await store.inbound.renewLeases(winner, 60_000)).toBe(2);
    });
  });
}

runTurnJournalContract('SQLite', () => openStore(`sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-journal-')), 'palaver.db')}`));

let postgres: TestPostgresDatabase | undefined;
let mariadb: TestMariadbDatabase | undefined;
afterAll(async () => {
  await postgres?.drop();
  await mariadb?.drop();
});
runTurnJournalContract('PostgreSQL', async () => {
  postgres = await createTestPostgresDatabase();
  return openStore(postgres.url);
});
runTurnJournalContract('MariaDB', async () => {
  mariadb = await createTestMariadbDatabase();
  return openStore(mariadb.url);
});
