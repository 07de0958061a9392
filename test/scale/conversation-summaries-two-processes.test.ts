import { afterEach, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import { SUMMARY_HEADING } from '../../src/runtime/context/summary-prompt.js';
import type { ScriptedCall } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

// agent.memory.summarize with two Palavers (two processes' worth: each its own pipeline, process id, claims and
// caches) on one database: one conversation answered by both gets one summary, written by one of them.

let harness: Harness | undefined;
let postgres: TestPostgresDatabase | undefined;
afterEach(async () => {
  await harness?.close();
  await postgres?.drop();
  harness = undefined;
  postgres = undefined;
});

const isSummaryCall = (call: ScriptedCall) => call.instructions.includes('You keep the memory of a long conversation');

async function summaries(palaver: Palaver, outcome: string): Promise<number> {
  const metric = await palaver.metrics.summaries.get();
  return metric.values.find((value) => value.labels['outcome'] === outcome)?.value ?? 0;
}

describe.each(['sqlite', 'postgres'] as const)('conversation summaries on two Palavers on one %s database', (database) => {
  it('writes one summary: the second finds the first writing it and leaves it; both then read it', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    harness = await createHarness(async (call) => {
      if (!isSummaryCall(call)) return { text: 'Noted.' };
      await held;
      return { text: 'Ann Smith; door code 4711.' };
    });
    const url = database === 'postgres' ? (postgres = await createTestPostgresDatabase()).url : harness.databaseUrl;
    const config = { database: { url }, agent: { historyLimit: 50, memory: { summarize: { afterTokens: 40, keepRecentMessages: 2 } } } };
    const a = await harness.start(config);
    const b = await harness.start(config);
    const chat = (palaver: Palaver, text: string) => palaver.chat({ userId: 'ann', conversationId: 'ann-thread', text });

    await chat(a, 'Please remember: my door code is 4711 and my name is Ann Smith.');
    await chat(b, 'What time do you open?');
    const { sessionId } = await chat(a, 'And on Sundays?');
    // A writes the summary (its call held); B's turn finds it due too, and the claim taken.
    await expect.poll(() => harness!.model.calls.filter(isSummaryCall).length).toBe(1);
    await chat(b, 'Is parking free?');
    await expect.poll(() => summaries(b, 'busy')).toBe(1);
    release();
    await expect.poll(() => summaries(a, 'written')).toBe(1);

    const stored = await a.store.summaries.latest(sessionId);
    expect(stored).toMatchObject({ version: 1, text: 'Ann Smith; door code 4711.' });
    expect(harness.model.calls.filter(isSummaryCall)).toHaveLength(1);
    expect(await summaries(b, 'written')).toBe(0);
    // B's next turn reads the summary A wrote.
    await chat(b, 'Thanks!');
    const last = harness.model.calls.filter((call) => !isSummaryCall(call)).at(-1)!;
    expect(last.messages[0]).toMatchObject({ role: 'user', content: `${SUMMARY_HEADING}\nAnn Smith; door code 4711.` });
  });
});
