/**
 * A long conversation with rolling summaries (`agent.memory.summarize`, issue 43): one person writes `--messages`
 * messages (default 2,000: 1,000 turns, each the person's message and the agent's reply), and every model call the
 * turns make is measured as the scripted model server received it: how many items and estimated tokens its prompt
 * held. The same conversation runs twice, with summaries and without, on a SQLite file in a temp folder, Palaver from
 * `src/` in this process, the scripted model server in this process too (Chat Completions over loopback).
 *
 * Every 50th message of the person asks the agent to remember a numbered fact. The scripted summariser keeps the
 * previous summary and every line that asks to be remembered (a model that does what the summary prompt asks); the
 * last turn's prompt is then searched for the facts: which of them reach the model at the end of the conversation.
 *
 * Usage: node --import tsx bench/summaries.ts [--messages N] [--json file]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createPalaver } from '../src/app.js';
import type { ModelInputItem } from '../src/domain/ports/model-provider.js';
import { estimateTokens } from '../src/domain/token-estimate.js';
import { silentLogger } from '../src/observability/logger.js';
import { startScriptedModelServer, type ScriptedCall, type ScriptedReply } from '../src/testing/index.js';

const argument = (name: string): string | undefined => {
  const index = process.argv.indexOf(name);
  return index === -1 ? undefined : process.argv[index + 1];
};
const MESSAGES = Number(argument('--messages') ?? 2_000);
const JSON_FILE = argument('--json');
const TURNS = Math.floor(MESSAGES / 2);
const FACT_EVERY = 50;

const HISTORY = { historyLimit: 60, historyTokenLimit: 8_000 };
const SUMMARIZE = { afterTokens: 2_000, keepRecentMessages: 10 };

const isSummaryCall = (call: ScriptedCall) => call.instructions.includes('You keep the memory of a long conversation');

/** Estimated tokens of a prompt as the server got it: the instructions and every item, as turns bound their history. */
function promptTokens(call: ScriptedCall): number {
  return (
    estimateTokens(call.instructions) +
    call.messages.reduce((sum, item) => sum + estimateTokens(item.type === 'message' ? item.content : JSON.stringify(item)), 0)
  );
}

const textOf = (items: readonly ModelInputItem[]) => items.map((item) => (item.type === 'message' ? item.content : '')).join('\n');

/** The summariser: the previous summary and every line asking to be remembered. */
function summarise(call: ScriptedCall): ScriptedReply {
  const input = textOf(call.messages);
  const previous = /^Previous summary \(version \d+\):\n([\s\S]*?)\n\nNew messages/m.exec(input)?.[1] ?? '';
  const kept = input
    .split('\n')
    .filter((line) => line.includes('Please remember'))
    .map((line) => line.replace(/^\[[^\]]*\] Person: Please remember: /, '- '));
  return { text: [previous, ...kept].filter(Boolean).join('\n') || 'Small talk so far.' };
}

/** The person's message of a turn: ordinary chat of about 40 tokens, and a fact to remember every FACT_EVERY messages. */
function personSays(turn: number): string {
  const seq = 2 * turn - 1;
  if (seq % FACT_EVERY === 1 && seq > 1) return `Please remember: fact ${Math.floor(seq / FACT_EVERY)} is the code ${1000 + seq}.`;
  return `Message ${seq}: I was thinking about the appointment next week, and whether the earlier slot on Tuesday still works for the two of us.`;
}

interface RunResult {
  readonly summaries: boolean;
  readonly turnPrompts: { readonly turn: number; readonly items: number; readonly tokens: number; readonly bytes: number }[];
  readonly summaryCalls: { readonly items: number; readonly tokens: number }[];
  readonly versions: number;
  readonly factsAtEnd: number;
  readonly factsTotal: number;
  readonly turnMs: number[];
  readonly wallMs: number;
}

async function run(summaries: boolean): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-bench-summaries-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a receptionist. Answer briefly.');
  const summaryCalls: { items: number; tokens: number }[] = [];
  const model = await startScriptedModelServer({
    // Only the last calls are kept: each turn's is read right after it.
    maxRecordedCalls: 50,
    script: (call) => {
      if (!isSummaryCall(call)) return { text: 'Noted: Tuesday still works, and I will keep the earlier slot for you.' };
      summaryCalls.push({ items: call.messages.length, tokens: promptTokens(call) });
      return summarise(call);
    },
  });
  const palaver = await createPalaver(
    {
      model: { name: 'scripted', baseUrl: model.baseUrl, apiKey: 'bench-key', maxRetries: 0 },
      database: { url: `sqlite:${join(dir, 'palaver.db')}` },
      agent: { instructionsDir: join(dir, 'instructions'), ...HISTORY, ...(summaries ? { memory: { summarize: SUMMARIZE } } : {}) },
      channels: { web: { enabled: false } },
    },
    { logger: silentLogger() },
  );
  const turnPrompts: RunResult['turnPrompts'][number][] = [];
  const turnMs: number[] = [];
  const started = performance.now();
  try {
    let sessionId = '';
    let last: ScriptedCall | undefined;
    for (let turn = 1; turn <= TURNS; turn += 1) {
      const before = performance.now();
      ({ sessionId } = await palaver.chat({ userId: 'ann', text: personSays(turn) }));
      turnMs.push(performance.now() - before);
      last = model.calls.filter((candidate) => !isSummaryCall(candidate)).at(-1)!;
      turnPrompts.push({ turn, items: last.messages.length, tokens: promptTokens(last), bytes: JSON.stringify(last.body).length });
    }
    const wallMs = performance.now() - started;
    const facts = new Set([...textOf(last!.messages).matchAll(/fact (\d+) is the code/g)].map((match) => match[1]));
    const versions = (await palaver.store.summaries.latest(sessionId))?.version ?? 0;
    return { summaries, turnPrompts, summaryCalls, versions, factsAtEnd: facts.size, factsTotal: Math.floor((2 * TURNS - 1) / FACT_EVERY), turnMs, wallMs };
  } finally {
    await palaver.close();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

const results: RunResult[] = [];
for (const summaries of [false, true]) results.push(await run(summaries));

const at = [...new Set([1, 100, 250, 500, 750, TURNS])].filter((turn) => turn <= TURNS);
console.log(
  `\nA ${2 * TURNS}-message conversation (${TURNS} turns), historyLimit ${HISTORY.historyLimit}, historyTokenLimit ${HISTORY.historyTokenLimit}; summaries: afterTokens ${SUMMARIZE.afterTokens}, keepRecentMessages ${SUMMARIZE.keepRecentMessages}`,
);
for (const result of results) {
  const label = result.summaries ? 'with summaries' : 'without summaries';
  const tokens = result.turnPrompts.map((prompt) => prompt.tokens);
  console.log(`\n${label}:`);
  console.log(
    `  prompt at turn ${at.map((turn) => `${turn}: ${result.turnPrompts[turn - 1]?.tokens ?? '-'} tokens / ${result.turnPrompts[turn - 1]?.items ?? '-'} items`).join(' · ')}`,
  );
  console.log(
    `  prompt over all turns: max ${Math.max(...tokens)} tokens, p50 ${percentile(tokens, 50)}; max request body ${Math.max(...result.turnPrompts.map((p) => p.bytes))} bytes`,
  );
  if (result.summaries)
    console.log(
      `  summary versions written: ${result.versions} (${result.summaryCalls.length} calls; their prompts max ${Math.max(...result.summaryCalls.map((call) => call.tokens))} tokens)`,
    );
  console.log(`  facts of the conversation in the last turn's prompt: ${result.factsAtEnd} of ${result.factsTotal}`);
  console.log(
    `  turn time p50 ${percentile(result.turnMs, 50).toFixed(1)} ms, p99 ${percentile(result.turnMs, 99).toFixed(1)} ms; wall ${(result.wallMs / 1000).toFixed(1)} s`,
  );
}
const machine = {
  node: process.version,
  cpu: cpus()[0]?.model,
  cores: cpus().length,
  memoryGb: Math.round(totalmem() / 2 ** 30),
  date: new Date().toISOString(),
};
console.log(`\n${JSON.stringify(machine)}`);
if (JSON_FILE) writeFileSync(JSON_FILE, `${JSON.stringify({ machine, messages: 2 * TURNS, history: HISTORY, summarize: SUMMARIZE, results }, null, 2)}\n`);
