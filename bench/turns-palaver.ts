/**
 * Turn throughput of a full Palaver: a SQLite file (WAL) in a temp folder or the PostgreSQL database it is given, Chat
 * Completions or Responses (chained, as Palaver runs it), one local `lookup` tool, silent logger. Each worker runs its
 * share of turns sequentially for one person at a time, a new person every `turnsPerPerson` turns, so history grows
 * per person and first contact counts, as in real use.
 * Palaver runs as it ships: the compiled `dist` (bench/run.ts builds it first), not the TypeScript sources through
 * tsx, whose transform adds work of its own to every function the turn creates.
 * Run by bench/run.ts (parameters as JSON in argv[2]); reports over IPC.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runWorkers, scenarioArgs, serveChunks } from './stats.js';
import { BASE_INSTRUCTIONS, BENCH_PRICES, HISTORY_LIMIT, lookupTool, personRotation, USER_TEXT, type TurnScenarioArgs } from './workload.js';

const args = scenarioArgs<TurnScenarioArgs>();
const { createPalaver, silentLogger } = (await import(new URL('../dist/index.js', import.meta.url).href)) as typeof import('../src/index.js');
const dir = mkdtempSync(join(tmpdir(), 'palaver-bench-'));
mkdirSync(join(dir, 'instructions'));
writeFileSync(join(dir, 'instructions', 'base.md'), BASE_INSTRUCTIONS);

const palaver = await createPalaver(
  {
    model: {
      name: 'scripted',
      baseUrl: args.baseUrl,
      provider: args.api === 'responses' ? 'openai-responses' : 'openai-chat',
      maxRetries: 0,
      timeoutMs: 60_000,
      prices: BENCH_PRICES,
    },
    database: { url: args.databaseUrl ?? `sqlite:${join(dir, 'palaver.db')}` },
    agent: { instructionsDir: join(dir, 'instructions'), historyLimit: HISTORY_LIMIT },
    limits: { maxConcurrentModelCalls: Math.max(64, args.concurrency * 2) },
    log: { level: 'silent' },
  },
  { tools: [lookupTool], logger: silentLogger() },
);

let failed = 0;
const turn = async (userId: string): Promise<void> => {
  const reply = await palaver.chat({ userId, text: USER_TEXT });
  if (reply.status !== 'completed' || !reply.text.startsWith('Lookup done')) {
    failed += 1;
    if (failed <= 3) console.error(`[palaver] unexpected reply (${reply.status}): ${reply.text}`);
  }
};

try {
  const warmupWorkers = Math.min(args.concurrency, args.warmupTurns);
  const warmupPerson = personRotation('warmup', args.turnsPerPerson);
  if (args.warmupTurns > 0) await runWorkers(warmupWorkers, args.warmupTurns, (worker) => turn(warmupPerson(worker)));
  const person = personRotation('user', args.turnsPerPerson);
  await serveChunks({
    scenario: 'palaver',
    concurrency: args.concurrency,
    turns: args.turns,
    profileDir: args.profileDir,
    op: (worker) => turn(person(worker)),
    finish: async () => {
      await palaver.close();
      return { failed };
    },
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
