/**
 * A turn with one streamed tool call against the same turn with the tool inline (issue 22's 1.2× goal). One process
 * runs two Palavers from the sources, each on its own SQLite file (WAL, temp folder) and the same scripted model
 * server (in this process, zero latency): `inline` runs `lookup` in process, `streams` sends it to the
 * `palaver worker` processes bench/run.ts started. At concurrency 1 the two sides take turns in blocks of
 * `block` turns, so a slow phase of the machine hits both; each side keeps its own user, whose history grows alike.
 * Run by bench/run.ts (parameters as JSON in argv[2]); reports over IPC.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPalaver, type Palaver } from '../src/app.js';
import { silentLogger } from '../src/observability/logger.js';
import { benchScript, startScriptedModelServer } from '../src/testing/index.js';
import { report, scenarioArgs, summarize, type ScenarioResult } from './stats.js';
import { BASE_INSTRUCTIONS, HISTORY_LIMIT, lookupTool, USER_TEXT } from './workload.js';

export interface DispatchTurnsArgs {
  readonly redisUrl: string;
  readonly keyPrefix: string;
  readonly workers: number;
  readonly turns: number;
  readonly warmupTurns: number;
  readonly block?: number;
}

const args = scenarioArgs<DispatchTurnsArgs>();
const block = args.block ?? 25;
const dir = mkdtempSync(join(tmpdir(), 'palaver-bench-turns-'));
mkdirSync(join(dir, 'instructions'));
writeFileSync(join(dir, 'instructions', 'base.md'), BASE_INSTRUCTIONS);
const model = await startScriptedModelServer({ script: benchScript, maxRecordedCalls: 100, maxStoredResponses: 100 });

const start = (side: 'inline' | 'streams'): Promise<Palaver> =>
  createPalaver(
    {
      model: { name: 'scripted', baseUrl: model.baseUrl, maxRetries: 0, timeoutMs: 60_000 },
      database: { url: `sqlite:${join(dir, `${side}.db`)}` },
      agent: { instructionsDir: join(dir, 'instructions'), historyLimit: HISTORY_LIMIT },
      log: { level: 'silent' },
      ...(side === 'streams' ? { tools: { dispatch: 'streams' as const }, redis: { url: args.redisUrl, keyPrefix: args.keyPrefix } } : {}),
    },
    { ...(side === 'inline' ? { tools: [lookupTool] } : {}), logger: silentLogger() },
  );
const sides = { inline: await start('inline'), streams: await start('streams') };
const latencies: Record<'inline' | 'streams', number[]> = { inline: [], streams: [] };
let failed = 0;

const turn = async (side: 'inline' | 'streams', record: boolean): Promise<void> => {
  const started = performance.now();
  const reply = await sides[side].chat({ userId: `user-${side}`, text: USER_TEXT });
  if (record) latencies[side].push(performance.now() - started);
  if (reply.status !== 'completed' || !reply.text.startsWith('Lookup done')) {
    failed += 1;
    if (failed <= 3) console.error(`[${side}] unexpected reply (${reply.status}): ${reply.text}`);
  }
};

for (let index = 0; index < args.warmupTurns; index += 1) await turn(index % 2 === 0 ? 'inline' : 'streams', false);
const started = performance.now();
for (let done = 0; done < args.turns; done += block) {
  for (const side of ['inline', 'streams'] as const) for (let index = 0; index < Math.min(block, args.turns - done); index += 1) await turn(side, true);
}
const elapsedMs = performance.now() - started;
await sides.inline.close();
await sides.streams.close();
await model.close();
rmSync(dir, { recursive: true, force: true });

const inline = summarize(latencies.inline);
const streams = summarize(latencies.streams);
const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);
const result: ScenarioResult = {
  scenario: `turn streams/inline workers=${args.workers}`,
  concurrency: 1,
  operations: latencies.streams.length,
  elapsedMs,
  perSecond: (latencies.streams.length * 1000) / elapsedMs,
  latency: streams,
  cpuMsPerOp: 0,
  mainThreadCpuMsPerOp: undefined,
  peakRssMb: process.resourceUsage().maxRSS / 1024,
  extra: {
    failed,
    inlineP50Ms: inline.p50Ms,
    streamsP50Ms: streams.p50Ms,
    ratioP50: streams.p50Ms / inline.p50Ms,
    ratioMean: mean(latencies.streams) / mean(latencies.inline),
    inlineMeanMs: mean(latencies.inline),
    streamsMeanMs: mean(latencies.streams),
  },
};
report(result);
