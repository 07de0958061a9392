import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { createTestMariadbDatabase, type TestMariadbDatabase } from '../support/mariadb.js';

// The same turn as on SQLite, on the machine's MariaDB: the runtime must not depend on the back end.
let database: TestMariadbDatabase;
let harness: Harness;
beforeAll(async () => {
  database = await createTestMariadbDatabase();
});
afterAll(async () => {
  await harness?.close();
  await database?.drop();
});

describe('agent turn on MariaDB', () => {
  it('runs a tool turn, keeps history across a restart, and bills exactly', async () => {
    const lookup = defineTool({ name: 'lookup', description: 'Looks up', input: z.object({ id: z.number() }), run: ({ id }) => `item ${id}` });
    harness = await createHarness((call) => {
      const last = call.messages[call.messages.length - 1];
      if (last?.type === 'tool_result') return { text: `got ${last.output}`, usage: { input: 1000, output: 100 } };
      return { toolCalls: [{ name: 'lookup', arguments: { id: 3 } }], usage: { input: 500, output: 20 } };
    });
    const config = { database: { url: database.url }, model: { prices: { scripted: { input: '0.40', output: '1.60' } } } };
    const first = await harness.start(config, { tools: [lookup] });
    const reply = await first.chat({ userId: 'maria-user', text: 'find 3' });
    expect(reply.text).toBe('got item 3');
    // (1500 * 0.40 + 120 * 1.60) / 1e6 = 0.000792
    expect(reply.usage.cost).toBe('0.000792');
    await first.close();

    const second = await harness.start(config, { tools: [lookup] });
    const session = await second.store.sessions.findById(reply.sessionId);
    expect(session).toMatchObject({ status: 'completed', inputTokens: 1500, outputTokens: 120, cost: '0.000792' });
    const messages = await second.store.messages.listRecent(reply.sessionId, { limit: 10, audience: 'display' });
    expect(messages.map((message) => message.content)).toEqual(['find 3', 'got item 3']);
  });
});
