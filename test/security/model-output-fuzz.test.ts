import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Palaver } from '../../src/app.js';
import { unstorableReason } from '../../src/domain/storable-text.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import type { ScriptedReply, ScriptedToolCall } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';
import { assertValidAguiEvent } from '../server/sse.js';
import { events, newVisitor, postRun, runInput } from './attack-kit.js';

// Property: whatever the model answers — text with NUL, lone surrogates, Markdown junk or megabytes; tool calls with
// unknown names, broken JSON, NUL and surrogates in their arguments, huge arguments — a web run over real HTTP ends
// (bounded), the message is answered exactly once and stored, the stored reply is storable text within the cap, no
// tool call runs twice, and the person never sees a raw failure.
//
// Replay a failure with the seed and path fast-check prints: MODEL_FUZZ_SEED=<seed> MODEL_FUZZ_PATH=<path>.

const MAX_REPLY_CHARS = 4_000;
const MAX_TOOL_ROUNDS = 3;

const junk = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udc00y',
  '\udc00\ud800',
  '\ud83d\udc26',
  '**bold** _it_ `code` ```\nfence',
  '[link](javascript:alert(1)) <script>alert(1)</script>',
  '# heading\n\n> quote\n- item\n\n| a | b |\n|---|---|',
  '\u202eevil\ufeff',
  '\\u0000',
  '"}',
);
/** Text from every corner of unicode, sometimes huge. */
const anyText = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 4, arbitrary: fc.array(fc.oneof(junk, fc.string({ maxLength: 8 })), { maxLength: 6 }).map((parts) => parts.join('')) },
  {
    weight: 1,
    arbitrary: fc.tuple(junk, fc.integer({ min: 5_000, max: 200_000 })).map(([unit, length]) => `word${unit} `.repeat(Math.ceil(length / 6)).slice(0, length)),
  },
);
const argumentsText = fc.oneof(
  { weight: 4, arbitrary: anyText.map((text) => JSON.stringify({ text })) },
  { weight: 2, arbitrary: anyText },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '{"text":"\\u0000"}',
      '{"text":"a\\ud800b"}',
      '{"text":"\\udc00"}',
      '{"text":1}',
      '[]',
      'null',
      '{"text":"ok"',
      '{"text":"\\\\u0000"}',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 10_000, max: 120_000 }).map((length) => JSON.stringify({ text: 'y'.repeat(length) })) },
);
const toolCall: fc.Arbitrary<ScriptedToolCall> = fc.record(
  {
    name: fc.oneof(
      { weight: 4, arbitrary: fc.constant('note') },
      { weight: 1, arbitrary: fc.constantFrom('unknown_tool', 'note\u0000', 'no\ud800te') },
      { weight: 1, arbitrary: anyText },
    ),
    arguments: argumentsText,
    callId: anyText,
  },
  { requiredKeys: ['name', 'arguments'] },
);
const reply: fc.Arbitrary<ScriptedReply> = fc.oneof(
  { weight: 3, arbitrary: anyText.map((text) => ({ text })) },
  { weight: 2, arbitrary: fc.record({ text: anyText, toolCalls: fc.array(toolCall, { minLength: 1, maxLength: 3 }) }) },
);
/** What the model answers, call after call, in one turn (the last answer repeats). */
const plan = fc.array(reply, { minLength: 1, maxLength: 3 });

interface Rig {
  readonly harness: Harness;
  readonly palaver: Palaver;
  readonly server: RunningHttpServer;
  readonly cookie: string;
  /** Tool runs of the current run, by call id. */
  readonly runs: Map<string, number>;
  /** The current run's plan and the model calls it got. */
  current: { plan: readonly ScriptedReply[]; calls: number };
}

async function startRig(config: Record<string, unknown>): Promise<Rig> {
  const runs = new Map<string, number>();
  const note = defineTool({
    name: 'note',
    description: 'Notes a text',
    input: z.object({ text: z.string() }),
    run: ({ text }, ctx) => {
      runs.set(ctx.callId, (runs.get(ctx.callId) ?? 0) + 1);
      return `noted ${text.slice(0, 100)}\u0000`;
    },
  });
  let rig: Rig | undefined;
  const harness = await createHarness(() => {
    const current = rig!.current;
    const answer = current.plan[Math.min(current.calls, current.plan.length - 1)]!;
    current.calls++;
    return answer;
  });
  // One visitor starts a conversation per random output: the web channel's hourly limit of new conversations would
  // refuse most of them.
  const palaver = await harness.start(
    {
      ...config,
      agent: { maxReplyChars: MAX_REPLY_CHARS, maxToolRounds: MAX_TOOL_ROUNDS },
      channels: { web: { limits: { newConversationsPerHourPerVisitor: 100_000, newConversationsPerHourPerAddress: 0 } } },
    },
    { tools: [note] },
  );
  const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  const { cookie } = await newVisitor(server.url);
  rig = { harness, palaver, server, cookie, runs, current: { plan: [], calls: 0 } };
  return rig;
}

/** One web run answered by `modelPlan`; checks every property. */
async function runOnce(rig: Rig, modelPlan: readonly ScriptedReply[]): Promise<void> {
  rig.current = { plan: modelPlan, calls: 0 };
  rig.runs.clear();
  const input = runInput(crypto.randomUUID(), 'go');
  const response = await postRun(rig.server.url, input, { cookie: rig.cookie });
  expect(response.status, response.body.slice(0, 500)).toBe(200);
  const list = events(response);
  list.forEach(assertValidAguiEvent);
  const end = list.at(-1)!;
  // Answered, or answered with an apology: never a raw error, never internals.
  if (end.type === 'RUN_ERROR') expect(end, JSON.stringify(end)).toMatchObject({ code: 'turn_failed' });
  else expect(end.type).toBe('RUN_FINISHED');
  expect(JSON.stringify(list)).not.toMatch(/Store operation|SQLITE_|invalid byte sequence|violates|ZodError|stack/);
  // Bounded: the model is asked at most once per tool round and once more to answer.
  expect(rig.current.calls).toBeLessThanOrEqual(MAX_TOOL_ROUNDS + 1);
  for (const [callId, count] of rig.runs) expect(count, `tool call ${JSON.stringify(callId)}`).toBe(1);
  // Stored and answered exactly once.
  const session = await rig.palaver.store.sessions.findByConversation('web', input.threadId as string);
  expect(session).toBeDefined();
  expect(await rig.palaver.store.inbound.listQueued(session!.id)).toEqual([]);
  const display = await rig.palaver.store.messages.listRecent(session!.id, { limit: 10, audience: 'display' });
  expect(display.map((message) => message.role)).toEqual(['user', 'assistant']);
  const stored = display[1]!.content;
  expect(unstorableReason(stored)).toBeUndefined();
  expect(stored.length).toBeLessThanOrEqual(MAX_REPLY_CHARS);
  for (const message of await rig.palaver.store.messages.listRecent(session!.id, { limit: 50, audience: 'audit' })) {
    expect(unstorableReason(message.content)).toBeUndefined();
  }
}

/** Settings for fast-check: a replayable seed (printed by fast-check on failure with the path that shrank to it). */
function fuzzParameters(numRuns: number): fc.Parameters<[readonly ScriptedReply[]]> {
  const seed = Number(process.env.MODEL_FUZZ_SEED ?? Date.now() % 2 ** 31);
  const path = process.env.MODEL_FUZZ_PATH;
  return { numRuns, seed, ...(path === undefined ? {} : { path }), verbose: 1 };
}

describe('random model output through a real turn', () => {
  describe('on SQLite', () => {
    let rig: Rig;
    beforeAll(async () => {
      rig = await startRig({});
    });
    afterAll(async () => {
      await rig?.server.close();
      await rig?.harness.close();
    });

    it('never crashes, hangs, loses or double-answers a message, or shows a raw failure', async () => {
      await fc.assert(
        fc.asyncProperty(plan, (modelPlan) => runOnce(rig, modelPlan)),
        fuzzParameters(40),
      );
      expect((await fetch(`${rig.server.url}/health`)).status).toBe(200);
    }, 180_000);
  });

  describe('on PostgreSQL', () => {
    let database: TestPostgresDatabase;
    let rig: Rig;
    beforeAll(async () => {
      database = await createTestPostgresDatabase();
      rig = await startRig({ database: { url: database.url } });
    });
    afterAll(async () => {
      await rig?.server.close();
      await rig?.harness.close();
      await database?.drop();
    });

    it('never crashes, hangs, loses or double-answers a message, or shows a raw failure', async () => {
      await fc.assert(
        fc.asyncProperty(plan, (modelPlan) => runOnce(rig, modelPlan)),
        fuzzParameters(15),
      );
    }, 180_000);
  });
});
