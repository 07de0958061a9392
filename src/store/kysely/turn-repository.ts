import type { OpenTurnRecord, TurnRepository } from '../../domain/ports/store.js';
import { prepared, preparedBatch } from './prepared-query.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import { storeOperation } from './store-errors.js';

/** The turn journal (see the port): open turns, the messages they answer, and their model calls. */
export class KyselyTurnRepository implements TurnRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  open(turn: OpenTurnRecord): Promise<void> {
    return storeOperation('turns.open', () =>
      atomically(this.#ctx.db, async (db) => {
        await openTurnQuery.execute(db, { id: turn.id, sessionId: turn.sessionId, owner: turn.owner, now: this.#ctx.now() });
        await addTurnMessagesQuery.execute(
          db,
          { turnId: turn.id },
          turn.inboundIds.map((inboundId, position) => ({ inboundId, position })),
        );
      }),
    );
  }

  lookup(inboundIds: readonly string[]) {
    return storeOperation('turns.lookup', async () => {
      if (inboundIds.length === 0) return { queued: new Set<string>(), open: undefined };
      const { db } = this.#ctx;
      const rows = await db
        .selectFrom('inbound_messages as im')
        .leftJoin('turn_messages as tm', 'tm.inbound_id', 'im.id')
        .select(['im.id', 'im.state', 'tm.turn_id'])
        .where('im.id', 'in', [...inboundIds])
        .execute();
      const queued = new Set(rows.filter((row) => row.state === 'queued').map((row) => row.id));
      // The oldest message's turn comes first: the batch is answered in order.
      const turnId = inboundIds.map((id) => rows.find((row) => row.id === id)?.turn_id).find((id) => id !== null && id !== undefined);
      if (turnId === undefined || turnId === null) return { queued, open: undefined };
      const members = await db
        .selectFrom('turns as t')
        .innerJoin('turn_messages as tm', 'tm.turn_id', 't.id')
        .select(['t.id', 't.session_id', 't.owner', 'tm.inbound_id'])
        .where('t.id', '=', turnId)
        .orderBy('tm.position')
        .execute();
      const first = members[0];
      const open: OpenTurnRecord | undefined =
        first === undefined
          ? undefined
          : { id: first.id, sessionId: first.session_id, owner: first.owner, inboundIds: members.map((member) => member.inbound_id) };
      return { queued, open };
    });
  }

  takeOver(turnId: string, input: { readonly from: string; readonly owner: string; readonly leaseMs: number }): Promise<boolean> {
    return storeOperation('turns.takeOver', () =>
      atomically(this.#ctx.db, async (db) => {
        // One statement decides, so of two processes each holding part of the turn exactly one takes it.
        const taken = await db
          .updateTable('turns')
          .set({ owner: input.owner })
          .where('id', '=', turnId)
          .where('owner', '=', input.from)
          .where(({ exists, selectFrom }) =>
            exists(
              selectFrom('turn_messages as tm')
                .innerJoin('inbound_messages as im', 'im.id', 'tm.inbound_id')
                .select('im.id')
                .where('tm.turn_id', '=', turnId)
                .where('im.state', '=', 'queued')
                .where('im.owner', '=', input.owner),
            ),
          )
          .executeTakeFirst();
        if (taken.numUpdatedRows !== 1n) return false;
        await db
          .updateTable('inbound_messages')
          .set({ owner: input.owner, lease_until: this.#ctx.now() + input.leaseMs })
          .where('state', '=', 'queued')
          .where('id', 'in', (eb) => eb.selectFrom('turn_messages').select('inbound_id').where('turn_id', '=', turnId))
          .execute();
        return true;
      }),
    );
  }

  recordModelCall(turnId: string, seq: number, call: string): Promise<void> {
    return storeOperation('turns.recordModelCall', async () => {
      await recordModelCallQuery.execute(this.#ctx.db, { turnId, seq, call, now: this.#ctx.now() });
    });
  }

  listModelCalls(turnId: string): Promise<string[]> {
    return storeOperation('turns.listModelCalls', async () => {
      const rows = await this.#ctx.db.selectFrom('turn_model_calls').select('call').where('turn_id', '=', turnId).orderBy('seq').execute();
      return rows.map((row) => row.call);
    });
  }

  attach(turnId: string, inboundId: string): Promise<void> {
    return storeOperation('turns.attach', async () => {
      const { db } = this.#ctx;
      const last = await db
        .selectFrom('turn_messages')
        .select((eb) => eb.fn.max('position').as('position'))
        .where('turn_id', '=', turnId)
        .executeTakeFirst();
      await db
        .insertInto('turn_messages')
        .values({ turn_id: turnId, inbound_id: inboundId, position: Number(last?.position ?? -1) + 1 })
        .execute();
    });
  }

  close(turnId: string): Promise<void> {
    return storeOperation('turns.close', () =>
      atomically(this.#ctx.db, async (db) => {
        await deleteToolCallsQuery.execute(db, { turnId });
        // Its messages and model calls go with it (ON DELETE CASCADE, migration 0013): two statements, not four.
        await deleteTurnQuery.execute(db, { turnId });
      }),
    );
  }
}

// A turn with a tool call opens, records and closes its journal: prepared, as every query a turn runs.

const openTurnQuery = prepared((db, $: { id: string; sessionId: string; owner: string; now: number }) =>
  db.insertInto('turns').values({ id: $.id, session_id: $.sessionId, owner: $.owner, created_at: $.now }),
);

/** A batch is a few messages; longer ones are built per call. */
const addTurnMessagesQuery = preparedBatch(
  (db, $: { turnId: string }, rows: readonly { inboundId: string; position: number }[]) =>
    db.insertInto('turn_messages').values(rows.map((row) => ({ inbound_id: row.inboundId, turn_id: $.turnId, position: row.position }))),
  { maxRows: 8 },
);

const recordModelCallQuery = prepared((db, $: { turnId: string; seq: number; call: string; now: number }, dialect) =>
  dialect.upsert(db.insertInto('turn_model_calls').values({ turn_id: $.turnId, seq: $.seq, call: $.call, created_at: $.now }), ['turn_id', 'seq'], {
    replace: ['call', 'created_at'],
  }),
);

const deleteToolCallsQuery = prepared((db, $: { turnId: string }) => db.deleteFrom('tool_calls').where('turn_id', '=', $.turnId));

const deleteTurnQuery = prepared((db, $: { turnId: string }) => db.deleteFrom('turns').where('id', '=', $.turnId));
