import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelScript } from '../../src/testing/index.js';
import { killAll } from '../cli/child-process.js';
import { events, newVisitor, postRun, runInput } from '../security/attack-kit.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { connectStreamClient, effectsFile, REDIS_URL, startWorker, writeWorkerConfig, type StreamClient } from './stream-client.js';

// End to end: a turn through createPalaver with tools.dispatch "streams", its tool run by a real `palaver worker`
// process that reads the same kind of config, on the machine's Redis under a prefix of the test's own.

let harness: Harness | undefined;
let client: StreamClient | undefined;
afterEach(async () => {
  await harness?.close();
  await killAll();
  await client?.close();
  harness = client = undefined;
});

const records = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

describe('a Palaver with tools.dispatch "streams" and a palaver worker process', { timeout: 60_000 }, () => {
  it('answers a turn whose tool ran on the worker, for the bound user, with the effects applied', async () => {
    client = await connectStreamClient();
    const file = effectsFile();
    const model: ModelScript = (call) => {
      const last = call.messages[call.messages.length - 1];
      if (last?.type === 'tool_result') return { text: `Done: ${last.output}` };
      if (/book/.test(lastUserText(call) ?? '') && call.toolNames.includes('book'))
        return { toolCalls: [{ name: 'book', arguments: { file, what: 'a table for two' } }] };
      return { text: `tools: ${[...call.toolNames].sort().join(',')}` };
    };
    const { workerId } = await startWorker(writeWorkerConfig(client.prefix));
    harness = await createHarness(model);
    const palaver = await harness.start({ tools: { dispatch: 'streams', callTimeoutMs: 15_000 }, redis: { url: REDIS_URL, keyPrefix: client.prefix } });

    // The runtime offers what the live worker serves.
    expect((await palaver.chat({ userId: 'olga', text: 'what can you do?' })).text).toBe('tools: book,crash,echo,repeat,slow');
    const reply = await palaver.chat({ userId: 'olga', text: 'book a table please' });
    const { user } = await palaver.store.users.resolveAccount({ channel: 'api', accountId: 'olga' });
    expect(reply).toMatchObject({ status: 'completed', text: `Done: Booked a table for two for ${user.id}` });
    expect(records(file).filter((line) => line.startsWith('effect'))).toEqual([
      expect.stringMatching(new RegExp(`^effect \\S+ a table for two for ${user.id}$`)),
    ]);
    // The flow state the tool set on the worker came back as an effect and was saved with the turn.
    expect((await palaver.store.userState.get(user.id))?.raw).toContain('"booking":{"what":"a table for two"}');
    expect(workerId).toBeTruthy();
  });

  it('shows the tool\u2019s own progress label while it runs on the worker, not the generic one', async () => {
    client = await connectStreamClient();
    const file = effectsFile();
    const model: ModelScript = (call) => {
      const last = call.messages[call.messages.length - 1];
      if (last?.type === 'tool_result') return { text: 'Booked.' };
      return { toolCalls: [{ name: 'book', arguments: { file, what: 'a table' } }] };
    };
    await startWorker(writeWorkerConfig(client.prefix));
    harness = await createHarness(model);
    const palaver = await harness.start({ tools: { dispatch: 'streams', callTimeoutMs: 15_000 }, redis: { url: REDIS_URL, keyPrefix: client.prefix } });
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    try {
      // The runtime learns the worker's tools (and their labels) from its catalogue.
      await expect.poll(async () => (await palaver.chat({ userId: 'lena', text: 'hi' })).text, { timeout: 15_000 }).toBe('Booked.');
      const visitor = await newVisitor(server.url);
      const run = await postRun(server.url, runInput('t-label', 'book it'), { cookie: visitor.cookie });
      const progress = events(run).filter((event) => event.type === 'CUSTOM' && event['name'] === 'palaver.tool_progress');
      expect(progress.map((event) => (event['value'] as { label: string }).label)).toContain('Booking your table…');
    } finally {
      await server.close();
    }
  });
});
