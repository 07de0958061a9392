/**
 * The Palaver of the history scenario (bench/history-turns.ts), from the compiled `dist`: the `lookup` turn against
 * the scripted model, `historyLimit` 6, the conversation cache's time to live as asked, on the database asked, the
 * tool inline or dispatched through Redis Streams to a `palaver worker`. Runs in the scenario's process, or in each
 * of two peer processes (bench/history-peer.ts) that the scenario drives in turn.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mainThreadCpuMs } from './stats.js';
import { BASE_INSTRUCTIONS, lookupTool, USER_TEXT } from './workload.js';

export const BENCH_HISTORY_LIMIT = 6;

export interface HistoryPalaverArgs {
  readonly baseUrl: string;
  /** `sqlite:<file>` or a PostgreSQL URL. */
  readonly databaseUrl: string;
  /** The conversation cache's time to live; 1 makes every turn read the store. */
  readonly cacheTtlMs: number;
  /** Set: the tool runs in the `palaver worker` listening under this Redis URL and key prefix. */
  readonly streams?: { readonly redisUrl: string; readonly keyPrefix: string };
}

/** One turn as the process that ran it saw it. */
export interface HistoryTurn {
  readonly sessionId: string;
  readonly ok: boolean;
  readonly detail: string;
  readonly turnMs: number;
  readonly cpuMs: number;
  readonly mainThreadCpuMs: number | undefined;
}

export interface HistoryPalaver {
  /** One timed `palaver.chat` of the bench question. */
  chat(userId: string): Promise<HistoryTurn>;
  /** Appends `count` turn-shaped messages to the session, in one transaction, as turns would have left it. */
  seed(sessionId: string, count: number): Promise<void>;
  /** Display messages the next turn of this session sends the model (the history read the turn does). */
  historySent(sessionId: string): Promise<number>;
  close(): Promise<void>;
}

export async function startHistoryPalaver(args: HistoryPalaverArgs): Promise<HistoryPalaver> {
  const { createPalaver, silentLogger } = (await import(new URL('../dist/index.js', import.meta.url).href)) as typeof import('../src/index.js');
  const dir = mkdtempSync(join(tmpdir(), 'palaver-bench-history-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), BASE_INSTRUCTIONS);
  const palaver = await createPalaver(
    {
      model: { name: 'scripted', baseUrl: args.baseUrl, maxRetries: 0, timeoutMs: 60_000 },
      database: { url: args.databaseUrl },
      agent: { instructionsDir: join(dir, 'instructions'), historyLimit: BENCH_HISTORY_LIMIT },
      cache: { ttlMs: args.cacheTtlMs },
      log: { level: 'silent' },
      ...(args.streams ? { tools: { dispatch: 'streams' as const }, redis: { url: args.streams.redisUrl, keyPrefix: args.streams.keyPrefix } } : {}),
    },
    // With streams the worker holds `lookup`; this process only dispatches it.
    { ...(args.streams ? {} : { tools: [lookupTool] }), logger: silentLogger() },
  );
  return {
    async chat(userId) {
      const cpuBefore = process.cpuUsage();
      const mainBefore = mainThreadCpuMs();
      const started = performance.now();
      const reply = await palaver.chat({ userId, text: USER_TEXT });
      const turnMs = performance.now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      const mainAfter = mainThreadCpuMs();
      return {
        sessionId: reply.sessionId,
        ok: reply.status === 'completed' && reply.text.startsWith('Lookup done'),
        detail: `${reply.status}: ${reply.text}`,
        turnMs,
        cpuMs: (cpu.user + cpu.system) / 1000,
        mainThreadCpuMs: mainBefore === undefined || mainAfter === undefined ? undefined : mainAfter - mainBefore,
      };
    },
    async seed(sessionId, count) {
      await palaver.store.messages.append(sessionId, turnShaped(count));
    },
    async historySent(sessionId) {
      return (await palaver.store.messages.listRecent(sessionId, { limit: BENCH_HISTORY_LIMIT, audience: 'display', sinceContextStart: true })).length;
    },
    async close() {
      await palaver.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Messages in the shape a turn stores them: the question, the tool's audit record, the answer. */
function turnShaped(count: number) {
  return Array.from({ length: count }, (_, index) => {
    const turn = Math.floor(index / 3);
    switch (index % 3) {
      case 0:
        return { role: 'user' as const, audience: 'display' as const, content: `What is the status of item ${turn}? I need it before the delivery on Friday.` };
      case 1:
        return {
          role: 'tool' as const,
          audience: 'audit' as const,
          content: JSON.stringify({ id: turn, name: `item-${turn}`, status: 'in stock', priceEur: 12.5 }),
          toolCallId: `seed_${turn}`,
        };
      default:
        return { role: 'assistant' as const, audience: 'display' as const, content: `Lookup done: item-${turn} is in stock at 12.50 EUR.` };
    }
  });
}
