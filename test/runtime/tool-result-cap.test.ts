import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RunningHttpServer } from '../../src/server/index.js';
import type { ModelScript } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { readAguiEvents, type AguiEvent } from '../channels/agui-client.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { readSqliteFile } from '../support/sqlite-file.js';

// A local tool that returns 30,000,000 characters: what the model is sent, what is stored and what the web stream
// shows are cut to `tools.maxResultChars` (default 20,000) with a notice that says how much was cut.

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  await harness?.close();
  server = harness = undefined;
});

const HUGE = 30_000_000;
const DEFAULT_CAP = 20_000;
const NOTICE = `\n…[truncated ${HUGE - DEFAULT_CAP} chars]`;

const dump = defineTool({ name: 'dump', description: 'Returns a very long text', input: z.object({}), run: () => 'x'.repeat(HUGE) });

/** Calls `dump`, then answers with the length of what it was given. */
const model: ModelScript = (call) => {
  const last = call.messages.at(-1);
  if (last?.type === 'tool_result') return { text: `Got ${last.output.length} characters.` };
  return { toolCalls: [{ name: 'dump', arguments: {} }] };
};

describe('a local tool result over tools.maxResultChars', { timeout: 60_000 }, () => {
  it('reaches the model, the store and the web stream cut to the cap, with a notice of the cut', async () => {
    harness = await createHarness(model);
    const palaver = await harness.start({ server: { showToolDetails: true } }, { tools: [dump] });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });

    const response = await fetch(`${server.url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: 't-cap',
        runId: 'r-cap',
        messages: [{ id: 'u-1', role: 'user', content: 'dump it' }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
      }),
    });
    expect(response.status).toBe(200);
    const events: AguiEvent[] = [];
    await readAguiEvents(response, (event) => events.push(event));

    const expected = 'x'.repeat(DEFAULT_CAP) + NOTICE;
    // The web stream shows the cut result (lengths first: a failure then reads as numbers, not 30 MB of x).
    const results = events.filter((event) => event.type === 'TOOL_CALL_RESULT').map((event) => String(event['content']));
    expect(results.map((content) => content.length)).toEqual([expected.length]);
    expect(results).toEqual([expected]);
    expect(events.at(-1)?.type).toBe('RUN_FINISHED');
    // The model's second request carries the same.
    const output = harness.model.calls[1]?.messages.flatMap((item) => (item.type === 'tool_result' ? [item.output] : []));
    expect(output).toEqual([expected]);
    // The store holds no more than that: the audit record and the call's idempotency record.
    const stored = readSqliteFile(harness.databaseUrl, (db) => ({
      messages: Number(db.get<{ n: number }>('SELECT max(length(content)) AS n FROM messages')?.n),
      toolCalls: Number(db.get<{ n: number }>('SELECT max(length(result)) AS n FROM tool_calls')?.n),
    }));
    expect(stored.messages).toBe(expected.length);
    expect(stored.toolCalls).toBeLessThan(expected.length + 1_000);
  });
});
