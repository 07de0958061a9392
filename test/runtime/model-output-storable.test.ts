import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

// Model output is untrusted input: NUL characters and lone surrogates in reply text, tool arguments (raw, and hidden
// in a JSON `\u0000` escape) and tool results must not keep a turn from being stored on any back end. PostgreSQL
// refuses NUL in text: before, the tool ran, storing failed, and the message was retried (and the tool run) forever.

let database: TestPostgresDatabase | undefined;
let harness: Harness | undefined;
beforeAll(async () => {
  database = await createTestPostgresDatabase();
});
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});
afterAll(async () => {
  await database?.drop();
});

const backends: [string, () => Record<string, unknown>][] = [
  ['SQLite', () => ({})],
  ['PostgreSQL', () => ({ database: { url: database!.url } })],
];

describe.each(backends)('model output with NUL and lone surrogates on %s', (_name, config) => {
  it('stores and answers the turn once, running each tool call once', async () => {
    const received: string[] = [];
    const echo = defineTool({
      name: 'echo',
      description: 'Echoes its text',
      input: z.object({ text: z.string() }),
      run: ({ text }) => {
        received.push(text);
        return `echo: ${text}`;
      },
    });
    harness = await createHarness((call) => {
      if (call.messages.at(-1)?.type === 'tool_result') return { text: 'done\u0000 with \uD800 broken' };
      return {
        toolCalls: [
          // A JSON escape: JSON.parse turns it into a real NUL in the value.
          { name: 'echo', arguments: '{"text":"esc\\u0000nul"}', callId: 'call_escaped' },
          // A raw NUL in the arguments text (an escaped one on the wire).
          { name: 'echo', arguments: '{"text":"raw\u0000nul"}', callId: 'call_raw' },
          // A lone surrogate hidden in an escape.
          { name: 'echo', arguments: '{"text":"half \\uD83D pair"}', callId: 'call_half' },
        ],
      };
    });
    const chat = new MemoryChannel({ name: 'chat' });
    const palaver = await harness.start(config(), { tools: [echo], channels: [chat] });

    const said = await chat.say('echo things', { accountId: 'nul-sender' });
    const { outcome } = await chat.waitForReply(said, { timeoutMs: 10_000 });

    expect(outcome.status).toBe('completed');
    // Shown to the person: the NUL is dropped, the broken character shows as U+FFFD.
    expect(outcome.reply).toBe('done with \uFFFD broken');
    // Each call ran once, with the unstorable characters made visible replacements.
    expect(received.sort()).toEqual(['esc\uFFFDnul', 'half \uFFFD pair', 'raw\uFFFDnul']);
    expect(harness.model.calls).toHaveLength(2);

    const display = await palaver.store.messages.listRecent(outcome.sessionId, { limit: 10, audience: 'display' });
    expect(display.map((message) => message.content)).toEqual(['echo things', 'done with \uFFFD broken']);
    const audit = await palaver.store.messages.listRecent(outcome.sessionId, { limit: 10, audience: 'audit' });
    expect(audit.map((message) => message.content).sort()).toEqual(['echo: esc\uFFFDnul', 'echo: half \uFFFD pair', 'echo: raw\uFFFDnul']);
    for (const message of audit) expect(JSON.stringify(message.toolCalls)).not.toMatch(/\\u0000|\\\\u0000|\\ud83d/i);
    // Answered: nothing is left for recovery to run again.
    expect(await palaver.store.inbound.listQueued(outcome.sessionId)).toEqual([]);
    expect(chat.settled).toHaveLength(1);
  });
});
