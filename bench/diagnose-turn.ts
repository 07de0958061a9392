/**
 * Where a Palaver turn's time goes, without a profiler: counts the SQL statements a turn runs (by text), times
 * better-sqlite3's prepare and execute, and times the per-turn helpers suspected of being expensive. With
 * `--postgres`, the turns run on a scratch PostgreSQL database (see bench-postgres.ts) and every `pg` query is one
 * round trip, counted and timed from send to answer (so it includes waiting for the server), and PostgreSQL's own
 * count of committed transactions (`pg_stat_database.xact_commit`) is read before and after the measured turns.
 * Everything in one process (scripted model server included), so use it for counts and ratios, not throughput.
 *
 * Usage: node --import tsx bench/diagnose-turn.ts [turns=400] [concurrency=8] [--postgres]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { createPalaver } from '../src/app.js';
import { silentLogger } from '../src/observability/logger.js';
import { renderRuntimeFacts } from '../src/runtime/context/instructions.js';
import { benchScript, startScriptedModelServer } from '../src/testing/index.js';
import { createBenchPostgresDatabase } from './bench-postgres.js';
import { runWorkers } from './stats.js';
import { BASE_INSTRUCTIONS, BENCH_PRICES, lookupTool, USER_TEXT } from './workload.js';

const positional = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const onPostgres = process.argv.includes('--postgres');
const turns = Number(positional[0] ?? 400);
const concurrency = Number(positional[1] ?? 8);

interface SqlStats {
  prepares: number;
  executes: number;
  prepareUs: number;
  executeUs: number;
}
const bySql = new Map<string, SqlStats>();
let counting = false;
/** Statements of the one traced turn at the end, in the order they ran. */
let trace: string[] | undefined;
const statsFor = (text: string): SqlStats => {
  const key = text
    .replace(/\s+/g, ' ')
    .replace(/\(\?(, \?)*\)/g, '(?…)')
    .slice(0, 110);
  let stats = bySql.get(key);
  if (!stats) bySql.set(key, (stats = { prepares: 0, executes: 0, prepareUs: 0, executeUs: 0 }));
  return stats;
};

// Wrap better-sqlite3: every prepare (Kysely prepares each query anew) and every run/all/get.
const proto = BetterSqlite3.prototype as unknown as { prepare(this: BetterSqlite3.Database, sql: string): BetterSqlite3.Statement };
const originalPrepare = proto.prepare;
proto.prepare = function prepare(this: BetterSqlite3.Database, text: string) {
  const t0 = performance.now();
  const statement = originalPrepare.call(this, text);
  // Statements are cached by the store, so most are prepared during warm-up: wrap always, count only when measuring.
  const stats = statsFor(text);
  if (counting) {
    stats.prepares += 1;
    stats.prepareUs += (performance.now() - t0) * 1000;
  }
  for (const method of ['run', 'all', 'get'] as const) {
    const original = statement[method] as (...args: unknown[]) => unknown;
    (statement as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      trace?.push(text.replace(/\s+/g, ' ').slice(0, 140));
      if (!counting) return original.apply(statement, args);
      const t1 = performance.now();
      try {
        return original.apply(statement, args);
      } finally {
        stats.executes += 1;
        stats.executeUs += (performance.now() - t1) * 1000;
      }
    };
  }
  return statement;
};

// Wrap pg: each query (a simple query, or a parse/bind/execute of a prepared one) is one round trip to the server.
const inTransaction = new WeakSet<pg.Client>();
let clientCommits = 0;
const clientProto = pg.Client.prototype as unknown as { query(this: pg.Client, ...args: unknown[]): unknown };
const originalQuery = clientProto.query;
clientProto.query = function query(this: pg.Client, ...args: unknown[]) {
  const first = args[0];
  const text = typeof first === 'string' ? first : String((first as { text?: unknown } | undefined)?.text ?? '?');
  trace?.push(text.replace(/\s+/g, ' ').slice(0, 140));
  if (!counting) return originalQuery.apply(this, args);
  // A commit is a `commit`, or any statement outside a transaction (PostgreSQL runs it in one of its own).
  const statement = text.trim().toLowerCase();
  if (statement === 'begin' || statement.startsWith('begin ')) inTransaction.add(this);
  else if (statement === 'commit' || statement === 'rollback') {
    inTransaction.delete(this);
    if (statement === 'commit') clientCommits += 1;
  } else if (!inTransaction.has(this)) clientCommits += 1;
  const stats = statsFor(text);
  const t0 = performance.now();
  const done = () => {
    stats.executes += 1;
    stats.executeUs += (performance.now() - t0) * 1000;
  };
  // pg-pool's own query() (the cluster bus's pg_notify) passes a callback and gets no promise back.
  const last = args.length - 1;
  const callback = args[last];
  if (typeof callback === 'function') {
    args[last] = (...results: unknown[]) => {
      done();
      return (callback as (...results: unknown[]) => unknown)(...results);
    };
    return originalQuery.apply(this, args);
  }
  const result = originalQuery.apply(this, args);
  return result instanceof Promise ? result.finally(done) : result;
};

/**
 * Transactions committed in the database, as PostgreSQL counts them (every statement outside a transaction is one).
 * An idle backend reports its counts after 10 s (PGSTAT_IDLE_INTERVAL), a closing one at once: it waits `waitMs` first.
 */
async function serverCommits(url: string, waitMs: number): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, waitMs));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ commits: string }>('select xact_commit as commits from pg_stat_database where datname = current_database()');
    return Number(rows[0]!.commits) + 1;
  } finally {
    await client.end();
  }
}

const IDLE_STATS_FLUSH_MS = 11_000;

const postgres = onPostgres ? await createBenchPostgresDatabase() : undefined;
const dir = mkdtempSync(join(tmpdir(), 'palaver-diag-'));
mkdirSync(join(dir, 'instructions'));
writeFileSync(join(dir, 'instructions', 'base.md'), BASE_INSTRUCTIONS);
const model = await startScriptedModelServer({ script: benchScript, maxRecordedCalls: 100 });
const palaver = await createPalaver(
  {
    model: { name: 'scripted', baseUrl: model.baseUrl, maxRetries: 0, timeoutMs: 60_000, prices: BENCH_PRICES },
    database: { url: postgres?.url ?? `sqlite:${join(dir, 'palaver.db')}` },
    agent: { instructionsDir: join(dir, 'instructions') },
    limits: { maxConcurrentModelCalls: 128 },
  },
  { tools: [lookupTool], logger: silentLogger() },
);
let closed = false;
try {
  await runWorkers(concurrency, 50, (worker) => palaver.chat({ userId: `warmup-${worker}`, text: USER_TEXT }).then(() => {}));
  trace = [];
  await palaver.chat({ userId: 'warmup-0', text: USER_TEXT });
  const traced = trace;
  trace = undefined;
  const commits0 = postgres ? await serverCommits(postgres.url, IDLE_STATS_FLUSH_MS) : 0;
  counting = true;
  const cpu0 = process.cpuUsage();
  const run = await runWorkers(concurrency, turns, (worker) => palaver.chat({ userId: `user-${worker}`, text: USER_TEXT }).then(() => {}));
  const cpu = process.cpuUsage(cpu0);
  counting = false;
  // Closing disconnects Palaver's pools, which reports their counts at once (the read before counted itself once).
  let commits = 0;
  if (postgres) {
    await palaver.close();
    closed = true;
    commits = (await serverCommits(postgres.url, 200)) - commits0 - 1;
  }

  const total = [...bySql.values()].reduce(
    (sum, s) => ({
      prepares: sum.prepares + s.prepares,
      executes: sum.executes + s.executes,
      prepareUs: sum.prepareUs + s.prepareUs,
      executeUs: sum.executeUs + s.executeUs,
    }),
    { prepares: 0, executes: 0, prepareUs: 0, executeUs: 0 },
  );
  const perTurn = (value: number): string => (value / turns).toFixed(2);
  console.log(
    `${turns} turns at c=${concurrency}: ${((turns * 1000) / run.elapsedMs).toFixed(0)} turns/s in-process, CPU ${((cpu.user + cpu.system) / 1000 / turns).toFixed(3)} ms/turn (client + model server)`,
  );
  console.log(
    onPostgres
      ? `PostgreSQL round trips per turn: ${perTurn(total.executes)}, ${(total.executeUs / turns / 1000).toFixed(3)} ms from send to answer; ` +
          `commits per turn: ${perTurn(clientCommits)} sent by Palaver, ${perTurn(commits)} in pg_stat_database (autovacuum's too)`
      : `SQL per turn: ${perTurn(total.prepares)} statements prepared, ${perTurn(total.executes)} executed; ` +
          `prepare ${(total.prepareUs / turns / 1000).toFixed(3)} ms + execute ${(total.executeUs / turns / 1000).toFixed(3)} ms per turn`,
  );
  console.log('\nper turn  prepare µs  execute µs  statement');
  for (const [text, s] of [...bySql].sort((a, b) => b[1].prepareUs + b[1].executeUs - (a[1].prepareUs + a[1].executeUs))) {
    console.log(
      `${perTurn(s.executes).padStart(8)}  ${(s.prepares ? s.prepareUs / s.prepares : 0).toFixed(1).padStart(10)}  ${(s.executes ? s.executeUs / s.executes : 0).toFixed(1).padStart(10)}  ${text}`,
    );
  }

  // Per-turn helpers.
  const time = (label: string, n: number, fn: () => unknown): void => {
    for (let i = 0; i < 50; i += 1) fn();
    const t0 = performance.now();
    for (let i = 0; i < n; i += 1) fn();
    console.log(`${label}: ${(((performance.now() - t0) / n) * 1000).toFixed(1)} µs per call`);
  };
  console.log('');
  time('renderRuntimeFacts (new Intl.DateTimeFormat per call; once per turn)', 2000, () => renderRuntimeFacts({ now: new Date(), timeZone: 'UTC' }));
  console.log(`\none more turn (after the warm-up), its ${traced.length} statements in order:`);
  for (const text of traced) console.log(`  ${text}`);
  const cached = new Intl.DateTimeFormat('en-GB', {
    timeZone: 'UTC',
    weekday: 'long',
    year: 'numeric',
    month: 'long',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'longOffset',
  });
  time('  the same with a cached Intl.DateTimeFormat', 2000, () => cached.format(new Date()));
} finally {
  if (!closed) await palaver.close();
  await model.close();
  await postgres?.drop();
  rmSync(dir, { recursive: true, force: true });
}
