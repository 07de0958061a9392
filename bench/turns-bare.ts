/**
 * The floor: the same turns with a bare `openai` SDK tool loop, over Chat Completions or Responses — no persistence,
 * in-memory display history per person (capped like Palaver's `historyLimit`), the same tool validated with the same
 * zod schema, the same rotation of people.
 * Run by bench/run.ts (parameters as JSON in argv[2]); reports over IPC.
 */
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { FunctionTool, ResponseInputItem } from 'openai/resources/responses/responses';
import { z } from 'zod';
import { runWorkers, scenarioArgs, serveChunks } from './stats.js';
import { BASE_INSTRUCTIONS, HISTORY_LIMIT, lookupInput, lookupItem, personRotation, USER_TEXT, type TurnScenarioArgs } from './workload.js';

const args = scenarioArgs<TurnScenarioArgs>();
// As a team writes it, the SDK brings its own wire (the global fetch); with --bare-transport it gets Palaver's (undici's
// fetch on a keep-alive Agent, as src/platform/outgoing-http.ts makes it), so the difference left is Palaver's own work per turn.
const transport = args.palaverTransport
  ? await (async () => {
      const { Agent, fetch: undiciFetch } = await import('undici');
      const dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
      return { fetch: ((input: string, init?: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher })) as unknown as typeof fetch };
    })()
  : undefined;
const client = new OpenAI({ baseURL: args.baseUrl, apiKey: 'not-needed', maxRetries: 0, timeout: 60_000, ...(transport ? { fetch: transport.fetch } : {}) });

// About as long as Palaver's composed instructions (base text plus the runtime-facts block).
const instructions = `${BASE_INSTRUCTIONS}\n\n## Runtime facts\n- Current date and time for the person: Sunday 22 November 2026 at 01:00 GMT (UTC)\n- Reply in the person's language: en`;
const { $schema: _schema, ...parameters } = z.toJSONSchema(lookupInput) as Record<string, unknown>;
const tools: ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup', description: 'Looks an item up by id.', parameters } }];
const responseTools: FunctionTool[] = [{ type: 'function', name: 'lookup', description: 'Looks an item up by id.', parameters, strict: false }];

type DisplayMessage = { role: 'user' | 'assistant'; content: string };
const histories = new Map<string, DisplayMessage[]>();

let failed = 0;

/** The display history of `userId`, created at first contact. */
function historyOf(userId: string): DisplayMessage[] {
  const history = histories.get(userId) ?? [];
  histories.set(userId, history);
  return history;
}

function remember(history: DisplayMessage[], text: string): void {
  if (!text.startsWith('Lookup done')) failed += 1;
  history.push({ role: 'user', content: USER_TEXT }, { role: 'assistant', content: text });
  if (history.length > 4 * HISTORY_LIMIT) history.splice(0, history.length - HISTORY_LIMIT);
}

function toolOutput(argumentsText: string): string {
  const parsed = lookupInput.safeParse(JSON.parse(argumentsText || '{}'));
  return parsed.success ? JSON.stringify(lookupItem(parsed.data.id)) : `Invalid arguments: ${parsed.error.message}`;
}

/** Chat Completions: the whole conversation (capped) with every call. */
const chatTurn = async (userId: string): Promise<void> => {
  const history = historyOf(userId);
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
      remember(history, message?.content ?? '');
      return;
    }
    messages.push({ role: 'assistant', content: message?.content ?? null, tool_calls: calls });
    for (const call of calls) messages.push({ role: 'tool', tool_call_id: call.id, content: toolOutput(call.function.arguments) });
  }
  failed += 1;
};

/** Responses: the conversation (capped) opens the turn; the tool round continues it by `previous_response_id`. */
const responsesTurn = async (userId: string): Promise<void> => {
  const history = historyOf(userId);
  let input: ResponseInputItem[] = [...history.slice(-HISTORY_LIMIT), { role: 'user', content: USER_TEXT }];
  let previous: string | undefined;
  for (let round = 0; round < 8; round += 1) {
    const response = await client.responses.create({
      model: 'scripted',
      instructions,
      input,
      tools: responseTools,
      ...(previous ? { previous_response_id: previous } : {}),
    });
    const calls = response.output.filter((item) => item.type === 'function_call');
    if (calls.length === 0) {
      remember(history, response.output_text);
      return;
    }
    previous = response.id;
    input = calls.map((call) => ({ type: 'function_call_output', call_id: call.call_id, output: toolOutput(call.arguments) }));
  }
  failed += 1;
};

const turn = args.api === 'responses' ? responsesTurn : chatTurn;

const warmupWorkers = Math.min(args.concurrency, args.warmupTurns);
const warmupPerson = personRotation('warmup', args.turnsPerPerson);
if (args.warmupTurns > 0) await runWorkers(warmupWorkers, args.warmupTurns, (worker) => turn(warmupPerson(worker)));
const person = personRotation('user', args.turnsPerPerson);
await serveChunks({
  scenario: 'bare',
  concurrency: args.concurrency,
  turns: args.turns,
  profileDir: args.profileDir,
  op: (worker) => turn(person(worker)),
  finish: async () => ({ failed }),
});
