import { afterEach, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import type { ModelInputItem } from '../../src/domain/ports/model-provider.js';
import { transcript } from '../../src/admin/api-contract.js';
import { SUMMARY_HEADING } from '../../src/runtime/context/summary-prompt.js';
import type { ScriptedCall, ScriptedReply } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

// agent.memory.summarize on a real SQLite file, with the scripted model over real HTTP: the summariser is the same
// model server, told apart by the summary call's instructions.

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** Whether a model call is a summary call (its instructions say so). */
function isSummaryCall(call: ScriptedCall): boolean {
  return call.instructions.includes('You keep the memory of a long conversation');
}

/** The text the model was sent in a call, every item joined. */
function textOf(items: readonly ModelInputItem[]): string {
  return items.map((item) => (item.type === 'message' ? item.content : '')).join('\n');
}

/** A summariser that keeps the previous summary and every line that asks to be remembered: a rolling summary. */
function rememberingSummary(call: ScriptedCall): ScriptedReply {
  const input = textOf(call.messages);
  const previous = /^Previous summary \(version \d+\):\n([\s\S]*?)\n\nNew messages/m.exec(input)?.[1] ?? '';
  const kept = input
    .split('\n')
    .filter((line) => line.includes('remember'))
    .map((line) => line.replace(/^\[[^\]]*\] /, ''));
  return { text: [previous, ...kept].filter(Boolean).join('\n') || 'Nothing to keep.', usage: { input: 900, output: 60 } };
}

const turnCalls = () => harness!.model.calls.filter((call) => !isSummaryCall(call));
const summaryCalls = () => harness!.model.calls.filter(isSummaryCall);

async function summaries(palaver: Palaver, outcome: string): Promise<number> {
  const metric = await palaver.metrics.summaries.get();
  return metric.values.find((value) => value.labels['outcome'] === outcome)?.value ?? 0;
}

const SUMMARIZE = { historyLimit: 50, memory: { summarize: { afterTokens: 40, keepRecentMessages: 2 } } };
const FACT = 'Please remember: my door code is 4711 and my name is Ann Smith.';

describe('conversation summaries', () => {
  it('writes a summary once the older messages pass afterTokens, after the reply, and the next turn reads it before the messages after its range', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    harness = await createHarness(async (call) => {
      if (!isSummaryCall(call)) return { text: 'Noted.' };
      await held;
      return rememberingSummary(call);
    });
    const palaver = await harness.start({ agent: SUMMARIZE });
    const { sessionId } = await palaver.chat({ userId: 'ann', text: FACT });
    // Below the threshold: nothing to summarise yet.
    await palaver.chat({ userId: 'ann', text: 'What time do you open?' });
    expect(await palaver.store.summaries.latest(sessionId)).toBeUndefined();
    // Past it: the reply comes while the summary is still being written, and a turn meanwhile reads none of it.
    expect((await palaver.chat({ userId: 'ann', text: 'And on Sundays?' })).text).toBe('Noted.');
    await expect.poll(() => summaryCalls().length).toBe(1);
    expect((await palaver.chat({ userId: 'ann', text: 'Is parking free?' })).text).toBe('Noted.');
    expect(textOf(turnCalls().at(-1)!.messages)).not.toContain(SUMMARY_HEADING);
    expect(await palaver.store.summaries.latest(sessionId)).toBeUndefined();
    release();
    await expect.poll(() => palaver.store.summaries.latest(sessionId)).toBeDefined();
    const summary = (await palaver.store.summaries.latest(sessionId))!;
    expect(summary).toMatchObject({ version: 1, fromSeq: 0, model: 'scripted', inputTokens: 900, outputTokens: 60 });
    expect(summary.text).toContain('door code is 4711');
    expect(await summaries(palaver, 'written')).toBe(1);
    // It covers the older messages as they stood after the third turn, never its newest two (keepRecentMessages).
    const stored = await palaver.store.messages.listRecent(sessionId, { limit: 100, audience: 'display' });
    expect(summary.toSeq).toBe(stored[3]!.seq);
    expect(textOf(summaryCalls()[0]!.messages)).toContain(FACT);
    expect(textOf(summaryCalls()[0]!.messages)).not.toContain('And on Sundays?');
    expect(summaryCalls()).toHaveLength(1);

    await palaver.chat({ userId: 'ann', text: 'Thanks!' });
    const next = turnCalls().at(-1)!;
    expect(next.messages[0]).toMatchObject({ type: 'message', role: 'user' });
    expect((next.messages[0] as { content: string }).content).toBe(`${SUMMARY_HEADING}\n${summary.text}`);
    // The summarised messages are read in the summary only; the ones after its range follow as they were written.
    const sent = next.messages.slice(1).map((item) => (item.type === 'message' ? item.content : ''));
    expect(sent).not.toContain(FACT);
    expect(sent).toEqual(['And on Sundays?', 'Noted.', 'Is parking free?', 'Noted.', 'Thanks!']);
    // Nothing is deleted: the store still holds every message.
    expect(await palaver.store.messages.listRecent(sessionId, { limit: 100, audience: 'display' })).toHaveLength(10);
  });

  it('counts the summary call in the conversation’s cost, its tokens and the daily budget spend', async () => {
    harness = await createHarness((call) => (isSummaryCall(call) ? rememberingSummary(call) : { text: 'Noted.', usage: { input: 100, output: 10 } }));
    const palaver = await harness.start({
      agent: { ...SUMMARIZE, memory: { summarize: { ...SUMMARIZE.memory.summarize, model: 'summariser' } } },
      model: { prices: { scripted: { input: '1', output: '2' }, summariser: { input: '10', output: '20' } } },
      budgets: { perUserPerDay: '5' },
    });
    let sessionId = '';
    for (const text of [FACT, 'What time do you open?', 'And on Sundays?']) ({ sessionId } = await palaver.chat({ userId: 'ann', text }));
    await expect.poll(() => summaries(palaver, 'written')).toBe(1);
    const summary = (await palaver.store.summaries.latest(sessionId))!;
    // The summary's own model, on the primary's endpoint: 900 × 10 + 60 × 20 per million.
    expect(summary).toMatchObject({ model: 'summariser', cost: '0.0102', currency: 'USD' });
    expect(summaryCalls()[0]!.model).toBe('summariser');
    // Three turns of 100 × 1 + 10 × 2 per million each, and the summary.
    const session = await palaver.store.sessions.findById(sessionId);
    expect(session).toMatchObject({ cost: '0.01056', inputTokens: 1200, outputTokens: 90 });
    const day = new Date().toISOString().slice(0, 10);
    expect(await palaver.store.spend.daily(session!.userId, day)).toEqual([{ currency: 'USD', cost: '0.01056' }]);
  });

  it('skips a summary whose call could cross a budget, without calling the model, and logs why', async () => {
    harness = await createHarness((call) => (isSummaryCall(call) ? rememberingSummary(call) : { text: 'Noted.', usage: { input: 100, output: 10 } }));
    const palaver = await harness.start({
      agent: { ...SUMMARIZE, memory: { summarize: { ...SUMMARIZE.memory.summarize, model: 'summariser' } } },
      // A turn may write 4096 tokens at most (0.008 at 2 per million): it fits; a summary call (at 20) could not.
      model: { prices: { scripted: { input: '1', output: '2' }, summariser: { input: '10', output: '20' } } },
      budgets: { perUserPerDay: '0.05' },
    });
    for (const text of [FACT, 'What time do you open?', 'And on Sundays?']) expect((await palaver.chat({ userId: 'ann', text })).text).toBe('Noted.');
    await expect.poll(() => summaries(palaver, 'over_budget')).toBe(1);
    expect(summaryCalls()).toHaveLength(0);
    expect(harness.logs.some((line) => String(line['msg']).startsWith('conversation summary skipped: Budget perUserPerDay reached'))).toBe(true);
  });

  it('stores nothing when the summary call fails, counts it, and tries again only after the next turn', async () => {
    let failSummaries = true;
    harness = await createHarness((call) => {
      if (!isSummaryCall(call)) return { text: 'Noted.' };
      return failSummaries ? { error: { status: 500, message: 'summariser down' } } : rememberingSummary(call);
    });
    const palaver = await harness.start({ agent: SUMMARIZE });
    let sessionId = '';
    for (const text of [FACT, 'What time do you open?', 'And on Sundays?']) ({ sessionId } = await palaver.chat({ userId: 'ann', text }));
    await expect.poll(() => summaries(palaver, 'failed')).toBe(1);
    // No loop: one call, nothing stored, until the next turn.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(summaryCalls()).toHaveLength(1);
    expect(await palaver.store.summaries.latest(sessionId)).toBeUndefined();
    const failure = harness.logs.find((line) => line['msg'] === 'conversation summary failed; the next turn tries again');
    expect(failure).toMatchObject({ sessionId });
    expect(failure?.['correlationId']).toEqual(expect.any(String));

    failSummaries = false;
    await palaver.chat({ userId: 'ann', text: 'Still there?' });
    // That turn read no summary (none was stored); after it, the summary is written.
    expect(textOf(turnCalls().at(-1)!.messages)).not.toContain(SUMMARY_HEADING);
    await expect.poll(() => palaver.store.summaries.latest(sessionId)).toBeDefined();
    expect(summaryCalls()).toHaveLength(2);
    expect(await summaries(palaver, 'written')).toBe(1);
  });

  it('starts afresh after /reset and after an operator ends the conversation: no summary of before is read', async () => {
    harness = await createHarness((call) => (isSummaryCall(call) ? rememberingSummary(call) : { text: 'Noted.' }));
    const palaver = await harness.start({ agent: SUMMARIZE });
    let sessionId = '';
    for (const text of [FACT, 'What time do you open?', 'And on Sundays?']) ({ sessionId } = await palaver.chat({ userId: 'ann', text }));
    await expect.poll(() => palaver.store.summaries.latest(sessionId)).toBeDefined();
    await palaver.chat({ userId: 'ann', text: '/reset' });
    await palaver.chat({ userId: 'ann', text: 'Hello again' });
    expect(textOf(turnCalls().at(-1)!.messages)).not.toContain('4711');
    expect(turnCalls().at(-1)!.messages).toHaveLength(1);

    for (const text of [FACT, 'What time do you open?', 'And on Sundays?']) await palaver.chat({ userId: 'ann', text });
    await expect.poll(async () => (await palaver.store.summaries.latest(sessionId))?.version).toBe(2);
    expect((await palaver.operators.end(sessionId, { actor: 'Olena', requestId: null })).ok).toBe(true);
    await palaver.chat({ userId: 'ann', text: 'Back once more' });
    expect(turnCalls().at(-1)!.messages).toHaveLength(1);
  });

  it('shows the summaries in the admin transcript (version, range, cost, the one read now) beside every message, none deleted', async () => {
    harness = await createHarness((call) => (isSummaryCall(call) ? rememberingSummary(call) : { text: 'Noted.', usage: { input: 100, output: 10 } }));
    const palaver = await harness.start({
      agent: SUMMARIZE,
      server: { adminToken: TEST_SECRETS.adminToken },
      model: { prices: { scripted: { input: '1', output: '2' } } },
    });
    let sessionId = '';
    for (const text of [FACT, 'What time do you open?', 'And on Sundays?']) ({ sessionId } = await palaver.chat({ userId: 'ann', text }));
    await expect.poll(() => summaries(palaver, 'written')).toBe(1);
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    try {
      const response = await fetch(`${server.url}/admin/conversations/${sessionId}/transcript`, {
        headers: { authorization: `Bearer ${TEST_SECRETS.adminToken}` },
      });
      const body = transcript.parse(await response.json());
      expect(body.messages.map((message) => message.text)).toEqual([FACT, 'Noted.', 'What time do you open?', 'Noted.', 'And on Sundays?', 'Noted.']);
      expect(body.summaries).toEqual([
        {
          version: 1,
          fromSeq: 0,
          toSeq: body.messages[3]!.seq,
          text: expect.stringContaining('door code is 4711'),
          model: 'scripted',
          inputTokens: 900,
          outputTokens: 60,
          cost: '0.00102',
          currency: 'USD',
          at: expect.any(String),
          current: true,
        },
      ]);
      // The conversation's cost holds the summary's too.
      expect(body.conversation.cost).toBe('0.00138');
    } finally {
      await server.close();
    }
  });

  it('recall: a fact from message 10 reaches the model at message 1,500, through fourteen rolling summaries', async () => {
    harness = await createHarness((call) => (isSummaryCall(call) ? rememberingSummary(call) : { text: 'Noted.' }));
    // The cache would not see messages stored behind its back: every turn reads the store.
    const palaver = await harness.start({
      agent: { historyLimit: 20, memory: { summarize: { afterTokens: 2000, keepRecentMessages: 10 } } },
      cache: { ttlMs: 1 },
    });
    const { sessionId } = await palaver.chat({ userId: 'ann', text: 'Hello' });
    const seed = async (through: number) => {
      const recent = await palaver.store.messages.listRecent(sessionId, { limit: 1 });
      const batch = [];
      for (let seq = recent[0]!.seq + 1; seq <= through; seq += 1) {
        const content = seq === 10 ? 'Please remember: my locker number is 2718.' : `Small talk number ${seq} about the weather.`;
        batch.push({ role: seq % 2 === 0 ? ('user' as const) : ('assistant' as const), audience: 'display' as const, content });
      }
      await palaver.store.messages.append(sessionId, batch);
    };
    // Fifteen stretches of a hundred messages, each ended by a turn of the person's; a summary follows each turn.
    for (let round = 1; round <= 15; round += 1) {
      await seed(100 * round - 1);
      const reply = await palaver.chat({ userId: 'ann', text: `Message ${100 * round}` });
      expect(reply.text).toBe('Noted.');
      if (round < 15) await expect.poll(async () => (await palaver.store.summaries.latest(sessionId))?.version, { timeout: 5_000 }).toBe(round);
    }
    const last = turnCalls().at(-1)!;
    expect(textOf(last.messages)).toContain('Message 1500');
    expect(textOf([last.messages[0]!])).toContain(SUMMARY_HEADING);
    expect(textOf([last.messages[0]!])).toContain('locker number is 2718');
    // The prompt stayed bounded: the summary and at most historyLimit messages before the new one.
    expect(last.messages.length).toBeLessThanOrEqual(1 + 20 + 1);
    // One summary call per turn, no more: the last turn's is the fifteenth.
    await expect.poll(async () => (await palaver.store.summaries.latest(sessionId))?.version).toBe(15);
    expect(summaryCalls()).toHaveLength(15);
  });
});
