/**
 * Where a turn scenario's memory goes: RSS, V8 heap spaces and external memory at each step (start, import,
 * createPalaver, warm-up, measured turns) of the Palaver or the bare-loop scenario, with the scripted model server
 * in a child process, as in `npm run bench`.
 *
 * Usage: node --import tsx bench/diagnose-memory.ts palaver|bare [turns=2000] [concurrency=1]
 */
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapSpaceStatistics } from 'node:v8';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { runWorkers } from './stats.js';
import { BASE_INSTRUCTIONS, BENCH_PRICES, HISTORY_LIMIT, lookupTool, USER_TEXT } from './workload.js';

const side = process.argv[2] ?? 'palaver';
const turns = Number(process.argv[3] ?? 2000);
const concurrency = Number(process.argv[4] ?? 1);

const mb = (bytes: number): string => (bytes / 1048576).toFixed(1);
function snapshot(label: string): void {
  if (process.env.DIAGNOSE_GC && typeof globalThis.gc === 'function') globalThis.gc();
  const usage = process.memoryUsage();
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((space) => [space.space_name.replace('_space', ''), mb(space.space_size)]));
  console.log(
    `${label.padEnd(26)} rss ${mb(usage.rss).padStart(6)}  peak ${mb(process.resourceUsage().maxRSS * 1024).padStart(6)}  heap ${mb(usage.heapUsed)}/${mb(usage.heapTotal)}  ` +
      `external ${mb(usage.external)} (buffers ${mb(usage.arrayBuffers)})  spaces ${JSON.stringify(spaces)}`,
  );
}

// The scripted model server runs in a child process, as in the benchmark.
const server = fork(join(import.meta.dirname, 'model-server.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const baseUrl = await new Promise<string>((resolve) => server.once('message', (message) => resolve(String(message))));
snapshot('start');

let turn: (userId: string) => Promise<void>;
let close: () => Promise<void> = async () => {};
if (side === 'palaver') {
  const { createPalaver, silentLogger } = (await import(new URL('../dist/index.js', import.meta.url).href)) as typeof import('../src/index.js');
  snapshot('imported');
  const dir = mkdtempSync(join(tmpdir(), 'palaver-memory-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), BASE_INSTRUCTIONS);
  const palaver = await createPalaver(
    {
      model: { name: 'scripted', baseUrl, maxRetries: 0, timeoutMs: 60_000, prices: BENCH_PRICES },
      database: { url: `sqlite:${join(dir, 'palaver.db')}` },
      agent: { instructionsDir: join(dir, 'instructions'), historyLimit: HISTORY_LIMIT },
      limits: { maxConcurrentModelCalls: Math.max(64, concurrency * 2) },
      log: { level: 'silent' },
    },
    { tools: [lookupTool], logger: silentLogger() },
  );
  snapshot('createPalaver');
  turn = async (userId) => {
    await palaver.chat({ userId, text: USER_TEXT });
  };
  close = async () => {
    await palaver.close();
    rmSync(dir, { recursive: true, force: true });
  };
} else {
  const { default: OpenAI } = await import('openai');
  const { z } = await import('zod');
  const { lookupInput, lookupItem } = await import('./workload.js');
  snapshot('imported');
  // The turn of bench/turns-bare.ts.
  const client = new OpenAI({ baseURL: baseUrl, apiKey: 'not-needed', maxRetries: 0, timeout: 60_000 });
  const instructions = `${BASE_INSTRUCTIONS}\n\n## Runtime facts\n- Current date and time for the person: Sunday 22 November 2026 at 01:00 GMT (UTC)\n- Reply in the person's language: en`;
  const { $schema: _schema, ...parameters } = z.toJSONSchema(lookupInput) as Record<string, unknown>;
  const tools: ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup', description: 'Looks an item up by id.', parameters } }];
  const histories = new Map<string, { role: 'user' | 'assistant'; content: string }[]>();
  turn = async (userId) => {
    const history = histories.get(userId) ?? [];
    histories.set(userId, history);
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: instructions },
      ...history.slice(-HISTORY_LIMIT),
      { role: 'user', content: USER_TEXT },
    ];
    for (let round = 0; round < 8; round += 1) {
      const completion = await client.chat.completions.create({ model: 'scripted', messages, tools });
      const message = completion.choices[0]?.message;
      const calls = (message?.tool_calls ?? []).filter((call) => call.type === 'function');
      if (calls.length === 0) {
        history.push({ role: 'user', content: USER_TEXT }, { role: 'assistant', content: message?.content ?? '' });
        if (history.length > 4 * HISTORY_LIMIT) history.splice(0, history.length - HISTORY_LIMIT);
        return;
      }
      messages.push({ role: 'assistant', content: message?.content ?? null, tool_calls: calls });
      for (const call of calls) {
        const parsed = lookupInput.safeParse(JSON.parse(call.function.arguments || '{}'));
        messages.push({ role: 'tool', tool_call_id: call.id, content: parsed.success ? JSON.stringify(lookupItem(parsed.data.id)) : 'Invalid arguments' });
      }
    }
  };
}
await turn('first');
snapshot('first turn');
await runWorkers(concurrency, 500, (worker) => turn(`warmup-${worker}`));
snapshot('warm-up (500 turns)');
for (let done = 0; done < turns; done += 500) {
  await runWorkers(concurrency, 500, (worker) => turn(`user-${worker}`));
  snapshot(`+${done + 500} turns`);
}
await close();
server.kill();
