import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';
import { strategyOf, type DialectStrategy } from './dialect-strategy.js';
import type { Database } from './schema.js';
import { engineOf, type StoreEngine } from './store-engine.js';

// Building and compiling a Kysely query costs more CPU than SQLite takes to run it. The hot queries of a turn are
// therefore built once per database with placeholder values and compiled; each call only re-binds the parameters and
// runs the compiled query (straight on the connection where the database's engine offers it, as Palaver's SQLite
// engine does; elsewhere through Kysely). The builder stays where the query is defined, so the SQL stays typed and
// readable; it gets the database's dialect strategy for what dialects spell differently (upserts).
//
// How it works: the builder is called with a proxy whose every property is a unique sentinel string. In the compiled
// query each parameter is either a sentinel (taken from the call's arguments) or a constant of the query (kept).
// Rules for builders, checked when the template is made:
// - an argument must only be used as a plain value (`set`, `values`, `where(col, '=', $.x)`, `limit`, sql`${$.x}`),
//   never where Kysely looks at it (`is` with null, arrays for `in`, `$if` conditions, branching in the builder);
// - at run time an argument must not be `undefined` (Kysely would drop the column; here it is refused).

/** A query built once per database and shape, then run with new parameter values. */
export interface PreparedQuery<A, R> {
  execute(db: Kysely<Database>, args: A): Promise<QueryResult<R>>;
}

/** A multi-row query (e.g. an INSERT of n rows), built once per database and row count. */
export interface PreparedBatch<A, Row, R> {
  execute(db: Kysely<Database>, args: A, rows: readonly Row[]): Promise<QueryResult<R>>;
}

/**
 * Prepares a query of named arguments.
 *
 * @example
 * const setStatus = prepared((db, $: { id: string; status: string }) =>
 *   db.updateTable('sessions').set({ status: $.status }).where('id', '=', $.id));
 * await setStatus.execute(ctx.db, { id, status: 'running' });
 */
export function prepared<A extends object, R>(build: (db: Kysely<Database>, $: A, dialect: DialectStrategy) => Compilable<R>): PreparedQuery<A, R> {
  const batch = preparedBatch<A, never, R>((db, $, _rows, dialect) => build(db, $, dialect));
  return { execute: (db, args) => batch.execute(db, args, NO_ROWS) };
}

/**
 * Prepares a query of named arguments plus `rows` (each a record of named values); one template per row count up to
 * `maxRows` (default: no limit), beyond which the query is built for each call.
 *
 * @example
 * const insert = preparedBatch((db, $: { now: number }, rows: readonly { id: string }[]) =>
 *   db.insertInto('things').values(rows.map((row) => ({ id: row.id, created_at: $.now }))));
 */
export function preparedBatch<A extends object, Row extends object, R>(
  build: (db: Kysely<Database>, $: A, rows: readonly Row[], dialect: DialectStrategy) => Compilable<R>,
  options: { readonly maxRows?: number } = {},
): PreparedBatch<A, Row, R> {
  const maxRows = options.maxRows ?? Number.POSITIVE_INFINITY;
  // Per Kysely adapter (one per database, shared by its transactions): its engine, then a template per row count.
  const templates = new WeakMap<object, Templates>();
  return {
    execute(db, args, rows) {
      const executor = db.getExecutor();
      // Plugins may rewrite queries or results per query id; keep their exact behaviour by building every time.
      // Longer batches are rare (imports); building them keeps one template per row count from piling up.
      if (executor.plugins.length > 0 || rows.length > maxRows) return db.executeQuery(build(db, args, rows, strategyOf(db)));
      let forDatabase = templates.get(executor.adapter);
      // An engine is attached when its database is opened, before any query runs, so it is looked up once.
      if (forDatabase === undefined) templates.set(executor.adapter, (forDatabase = { engine: engineOf(db), byRows: new Map() }));
      let template = forDatabase.byRows.get(rows.length);
      if (template === undefined) forDatabase.byRows.set(rows.length, (template = makeTemplate(db, build, rows.length)));
      const query = template.bind(args as Record<string, unknown>, rows as readonly Record<string, unknown>[]);
      const { engine } = forDatabase;
      return engine === undefined ? db.executeQuery<R>(query) : engine.run<R>(query, db.isTransaction);
    },
  };
}

const NO_ROWS: readonly never[] = [];

interface Templates {
  readonly engine: StoreEngine | undefined;
  readonly byRows: Map<number, Template>;
}

/** Where a parameter comes from: a constant of the query, an argument, or a field of one row. */
type Slot =
  | { readonly kind: 'constant'; readonly value: unknown }
  | { readonly kind: 'arg'; readonly key: string }
  | { readonly kind: 'row'; readonly row: number; readonly key: string };

interface Template {
  bind(args: Record<string, unknown>, rows: readonly Record<string, unknown>[]): CompiledQuery<never>;
}

// A character that no query text or constant of the store contains.
const MARK = '\u0000palaver-param\u0000';

function makeTemplate<A extends object, Row extends object>(
  db: Kysely<Database>,
  build: (db: Kysely<Database>, $: A, rows: readonly Row[], dialect: DialectStrategy) => Compilable<unknown>,
  rowCount: number,
): Template {
  const sentinels = new Map<string, Slot>();
  const sentinelRecord = (prefix: string, slot: (key: string) => Slot): object =>
    new Proxy(
      {},
      {
        get(_target, key) {
          if (typeof key !== 'string') return undefined;
          const sentinel = `${MARK}${prefix}.${key}`;
          if (!sentinels.has(sentinel)) sentinels.set(sentinel, slot(key));
          return sentinel;
        },
      },
    );
  const $ = sentinelRecord('$', (key) => ({ kind: 'arg', key })) as A;
  const rows = Array.from({ length: rowCount }, (_, row) => sentinelRecord(`row${row}`, (key) => ({ kind: 'row', row, key })) as Row);
  const compiled = build(db, $, rows, strategyOf(db)).compile();

  if (compiled.sql.includes(MARK)) throw new Error(`A prepared query embeds an argument in its SQL text: ${compiled.sql}`);
  const slots: Slot[] = compiled.parameters.map((value) => sentinels.get(value as string) ?? { kind: 'constant', value });
  for (const [sentinel, slot] of sentinels) {
    if (!compiled.parameters.includes(sentinel))
      throw new Error(`Prepared query argument ${JSON.stringify(slot)} is not a plain parameter of: ${compiled.sql}`);
  }

  const { sql, query, queryId } = compiled;
  return {
    bind(args, boundRows) {
      const parameters = new Array<unknown>(slots.length);
      for (let index = 0; index < slots.length; index += 1) {
        const slot = slots[index]!;
        const value = slot.kind === 'constant' ? slot.value : slot.kind === 'arg' ? args[slot.key] : boundRows[slot.row]![slot.key];
        if (value === undefined) throw new TypeError(`Prepared query parameter ${JSON.stringify(slot)} is undefined: ${sql}`);
        parameters[index] = value;
      }
      return { sql, query, queryId, parameters };
    },
  };
}
