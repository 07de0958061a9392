import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../../src/domain/model.js';
import type { SummaryBacklog } from '../../../src/domain/ports/store.js';
import { estimateTokens } from '../../../src/domain/token-estimate.js';
import { summaryChunk, summaryDue } from '../../../src/runtime/context/summary-backlog.js';
import { storableSummary, summaryInput } from '../../../src/runtime/context/summary-prompt.js';

const backlog = (unsummarised: [number, number], older: [number, number]): SummaryBacklog => ({
  latest: undefined,
  contextStart: 0,
  unsummarised: { messages: unsummarised[0], tokens: unsummarised[1] },
  older: { messages: older[0], tokens: older[1] },
  recentFrom: null,
});

const message = (seq: number, content: string, role: 'user' | 'assistant' = 'user'): StoredMessage => ({
  id: `m${seq}`,
  sessionId: 's',
  seq,
  role,
  audience: 'display',
  content,
  toolCalls: null,
  toolCallId: null,
  model: null,
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  tokenEstimate: estimateTokens(content),
  cost: '0',
  currency: 'USD',
  correlationId: null,
  meta: null,
  createdAt: new Date('2026-03-06T09:30:00Z'),
});

describe('when a summary is due', () => {
  const settings = { afterTokens: 1000, keepRecentMessages: 4 };
  const bounds = { historyLimit: 20, historyTokenLimit: 8000 };

  it('waits until the older messages estimate more than afterTokens', () => {
    expect(summaryDue(backlog([10, 1200], [6, 1000]), settings, bounds)).toBe(false);
    expect(summaryDue(backlog([10, 1201], [6, 1001]), settings, bounds)).toBe(true);
  });

  it('comes sooner when unsummarised messages would no longer fit the history the model is sent', () => {
    // 21 short messages: under afterTokens, but the oldest would fall out of historyLimit unsummarised.
    expect(summaryDue(backlog([20, 200], [16, 160]), settings, bounds)).toBe(false);
    expect(summaryDue(backlog([21, 210], [17, 170]), settings, bounds)).toBe(true);
    expect(summaryDue(backlog([5, 8001], [1, 500]), settings, bounds)).toBe(true);
    // No token bound: only the count and afterTokens decide.
    expect(summaryDue(backlog([5, 8001], [1, 500]), settings, { ...bounds, historyTokenLimit: 0 })).toBe(false);
  });

  it('never summarises the newest messages: nothing older, nothing due', () => {
    expect(summaryDue(backlog([40, 90_000], [0, 0]), settings, bounds)).toBe(false);
  });
});

describe('what one summary call reads', () => {
  it('takes the oldest messages within its token bound, and at least one however long', () => {
    const messages = [message(1, 'a'.repeat(400)), message(2, 'b'.repeat(400)), message(3, 'c'.repeat(400))];
    expect(summaryChunk(messages, 220).map((m) => m.seq)).toEqual([1, 2]);
    expect(summaryChunk(messages, 10).map((m) => m.seq)).toEqual([1]);
    expect(summaryChunk(messages)).toBe(messages);
  });

  it('shows the previous summary and each message with its time in the person’s zone and who wrote it', () => {
    const previous = {
      id: 'x',
      sessionId: 's',
      version: 3,
      fromSeq: 0,
      toSeq: 9,
      text: 'Ann, door code 4711.',
      model: 'm',
      inputTokens: 0,
      outputTokens: 0,
      cost: '0',
      currency: 'USD',
      createdAt: new Date(),
    };
    const [item] = summaryInput(previous, [message(10, 'Move my visit to Friday'), message(11, 'Done: Friday 10:00.', 'assistant')], 'Europe/Kyiv');
    expect(item).toEqual({
      type: 'message',
      role: 'user',
      content:
        'Previous summary (version 3):\nAnn, door code 4711.\n\nNew messages, oldest first:\n[Fri 2026-03-06 11:30] Person: Move my visit to Friday\n[Fri 2026-03-06 11:30] Agent: Done: Friday 10:00.',
    });
  });

  it('keeps a summary within twice the length asked for, cut at a word', () => {
    const long = 'word '.repeat(2000);
    const { text, cut } = storableSummary(long, { afterTokens: 512 });
    expect(cut).toBe(true);
    expect(estimateTokens(text)).toBeLessThanOrEqual(512);
    expect(text.endsWith('word …')).toBe(true);
    expect(storableSummary('  Short.  ', { afterTokens: 512 })).toEqual({ text: 'Short.', cut: false });
  });
});
