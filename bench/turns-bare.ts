/**
 * The floor: the same turns with a bare `openai` SDK tool loop — no persistence, in-memory display history per
 * user (capped like Palaver's `historyLimit`), the same tool validated with the same zod schema.
 * Run by bench/run.ts (parameters as JSON in argv[2]); reports over IPC.
 */
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { z } from 'zod';
import { runWorkers, scenarioArgs, serveChunks } from './stats.js';
import { BASE_INSTRUCTIONS, HISTORY_LIMIT, lookupInput, lookupItem, USER_TEXT, type TurnScenarioArgs } from './workload.js';

const args = scenarioArgs<TurnScenarioArgs>();
// As a team writes it, the SDK brings its own wire (the global fetch); with --bare-transport it gets Palaver's, so the
// difference left is Palaver's own work per turn.
const transport = args.palaverTransport
  ? ((await import(new URL('../dist/http-client/http-transport.js', import.meta.url).href)) as typeof import('../src/http-client/http-transport.js')).createHttpTransport()
  : undefined;
const client = new OpenAI({ baseURL: args.baseUrl, apiKey: 'not-needed', maxRetries: 0, timeout: 60_000, ...(transport ? { fetch: transport.fetch } : {}) });

// About as long as Palaver's composed instructions (base text plus the runtime-facts block).
const instructions = `${BASE_INSTRUCTIONS}\n\n## Runtime facts\n- Current date and time for the person: Sunday 22 November 2026 at 01:00 GMT (UTC)\n- Reply in the person's language: en`;
const { $schema: _schema, ...parameters } = z.toJSONSchema(lookupInput) as Record<string, unknown>;
const tools: ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup', description: 'Looks an item up by id.', parameters } }];

type DisplayMessage = { role: 'user' | 'assistant'; content: string };
const histories = new Map<string, DisplayMessage[]>();

let failed = 0;
const turn = async (userId: string): Promise<void> => {
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
      const text = message?.content ?? '';
      if (!text.startsWith('Lookup done')) failed += 1;
      history.push({ role: 'user', content: USER_TEXT }, { role: 'assistant', content: text });
      if (history.length > 4 * HISTORY_LIMIT) history.splice(0, history.length - HISTORY_LIMIT);
      return;
    }
    messages.push({ role: 'assistant', content: message?.content ?? null, tool_calls: calls });
    for (const call of calls) {
      const parsed = lookupInput.safeParse(JSON.parse(call.function.arguments || '{}'));
      const content = parsed.success ? JSON.stringify(lookupItem(parsed.data.id)) : `Invalid arguments: ${parsed.error.message}`;
      messages.push({ role: 'tool', tool_call_id: call.id, content });
    }
  }
  failed += 1;
};

const warmupWorkers = Math.min(args.concurrency, args.warmupTurns);
if (args.warmupTurns > 0) await runWorkers(warmupWorkers, args.warmupTurns, (worker) => turn(`warmup-${worker}`));
await serveChunks({
  scenario: 'bare',
  concurrency: args.concurrency,
  turns: args.turns,
  profileDir: args.profileDir,
  op: (worker) => turn(`user-${worker}`),
  finish: async () => ({ failed }),
});
