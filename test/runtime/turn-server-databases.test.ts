import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/tools/define-tool.js';
import { createTestMariadbDatabase } from '../support/mariadb.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { createTestPostgresDatabase } from '../support/postgres.js';

// The same turn as on SQLite, on the machine's database servers: the runtime must not depend on the back end.
const servers = [
  { name: 'PostgreSQL', create: createTestPostgresDatabase },
  { name: 'MariaDB', create: createTestMariadbDatabase },
] as const;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.each(servers)('agent turn on $name', ({ create }) => {
  it('runs a tool turn, keeps history across a restart, and bills exactly', async () => {
    const database = await create();
    cleanups.push(() => database.drop());
    const lookup = defineTool({ name: 'lookup', description: 'Looks up', input: z.object({ id: z.number() }), run: ({ id }) => `item ${id}` });
    const harness: Harness = await createHarness((call) => {
      const last = call.messages[call.messages.length - 1];
      if (last?.type === 'tool_result') return { text: `got ${last.output}`, usage: { input: 1000, output: 100 } };
      return { toolCalls: [{ name: 'lookup', arguments: { id: 3 } }], usage: { input: 500, output: 20 } };
    });
    cleanups.push(() => harness.close());
    const config = { database: { url: database.url }, model: { prices: { scripted: { input: '0.40', output: '1.60' } } } };
    const first = await harness.start(config, { tools: [lookup] });
    const reply = await first.chat({ userId: 'server-user', text: 'find 3' });
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
