import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Palaver } from '../../src/app.js';
import type { RedisSettings } from '../../src/platform/redis-connection.js';
import { ToolRegistry } from '../../src/runtime/tools/tool-registry.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { startFakeTelegram, type FakeTelegram, type ModelScript } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { LocalToolHost } from '../../src/tools/local-tool-host.js';
import { runInput } from '../security/attack-kit.js';
import { assertValidAguiEvent } from '../server/sse.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { dropTestKeys, testRedisSettings } from '../support/redis.js';
import { startStandInWorker, type StandInWorker } from '../support/stand-in-tool-worker.js';

// While a streamed tool call waits for its worker, the person sees that something is going on: the web page gets the
// tool-call events at once (not when the result is in), and Telegram keeps showing "typing". The worker holds the
// call until the test has seen that, then answers.

let harness: Harness | undefined;
let worker: StandInWorker | undefined;
let server: RunningHttpServer | undefined;
let telegram: FakeTelegram | undefined;
let redis: RedisSettings | undefined;
let release: (() => void) | undefined;
afterEach(async () => {
  release?.();
  await server?.close();
  await harness?.close();
  await worker?.close();
  await telegram?.close();
  if (redis) await dropTestKeys(redis);
  harness = worker = server = telegram = redis = release = undefined;
});

const model: ModelScript = (call) => {
  const last = call.messages[call.messages.length - 1];
  if (last?.type === 'tool_result') return { text: `Done: ${last.output}` };
  if (/track/.test(lastUserText(call) ?? '') && call.toolNames.includes('track')) return { toolCalls: [{ name: 'track', arguments: { parcel: 'P-42' } }] };
  return { text: 'no tool' };
};

/** A worker whose `track` tool waits until the test releases it; `held` resolves when the worker has started it. */
async function startHoldingWorker(): Promise<{ held: Promise<void> }> {
  let started!: () => void;
  const held = new Promise<void>((resolve) => (started = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  const track = defineTool({
    name: 'track',
    description: 'Where a parcel is',
    input: z.object({ parcel: z.string() }),
    async run({ parcel }) {
      started();
      await gate;
      return `${parcel} is in Lviv`;
    },
  });
  redis = testRedisSettings();
  worker = await startStandInWorker({ redis, registry: new ToolRegistry([new LocalToolHost([track])]) });
  return { held };
}

type AguiEvent = Record<string, unknown> & { type: string };

/** Reads an SSE body as it arrives, leaving out typing events; `until` resolves with the events so far once one matches. */
function sseReader(body: ReadableStream<Uint8Array>) {
  const events: AguiEvent[] = [];
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = '';
  const done = (async () => {
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (ended) return;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trimStart())
          .join('\n');
        if (data === '') continue;
        const event = JSON.parse(data) as AguiEvent;
        // The typing indicator is renewed while the turn runs; these tests are about the tool call's events.
        if (event.type === 'CUSTOM' && event['name'] === 'palaver.typing') continue;
        events.push(event);
      }
    }
  })();
  return { events, done };
}

describe('a streamed tool call the worker has not answered yet', { timeout: 60_000 }, () => {
  it('is shown to the web page as a pending tool call before its result, which follows when the worker answers', async () => {
    const { held: started } = await startHoldingWorker();
    harness = await createHarness(model);
    const palaver: Palaver = await harness.start({ tools: { dispatch: 'streams', callTimeoutMs: 30_000 }, redis });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });

    const response = await fetch(`${server.url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(runInput('t-pending', 'track my parcel')),
    });
    expect(response.status).toBe(200);
    const stream = sseReader(response.body!);
    await started;
    // The worker holds the call: the page already shows the tool, and no result yet.
    await expect.poll(() => stream.events.map((event) => event.type), { timeout: 15_000 }).toContain('CUSTOM');
    const types = stream.events.map((event) => event.type);
    expect(types).toEqual(['RUN_STARTED', 'CUSTOM']);
    expect(stream.events[1]).toMatchObject({ name: 'palaver.tool_progress', value: { status: 'running', label: 'Working on it…' } });
    expect(worker!.ran).toHaveLength(1);
    // The turn's journal holds the call as running, recorded once (by the dispatcher, with its outbox entry).
    const [held] = worker!.ran;
    expect(await palaver.store.toolCalls.listByTurn(held!.turn)).toMatchObject([{ callId: held!.idempotencyKey, name: 'track', status: 'running' }]);

    release!();
    await stream.done;
    stream.events.forEach(assertValidAguiEvent);
    expect(stream.events[2]).toMatchObject({
      name: 'palaver.tool_progress',
      value: { toolCallId: (stream.events[1]!['value'] as { toolCallId: string }).toolCallId, status: 'done' },
    });
    expect(
      stream.events
        .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
        .map((event) => event['delta'])
        .join(''),
    ).toBe('Done: P-42 is in Lviv');
    expect(stream.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed' } });
  });

  it('keeps Telegram typing while the worker holds the call: the indicator is renewed during the wait', async () => {
    const { held } = await startHoldingWorker();
    telegram = await startFakeTelegram();
    harness = await createHarness(model);
    await harness.start({
      tools: { dispatch: 'streams', callTimeoutMs: 30_000 },
      redis,
      channels: { web: { enabled: false }, telegram: { token: telegram.token, apiRoot: telegram.apiRoot, quietWindowMs: 100, drafts: false } },
    });

    telegram.sendText({ chatId: 77, text: 'track my parcel please' });
    await held;
    const heldAt = Date.now();
    // Typing is renewed every 4 s (it lasts 5 s on Telegram's side): at least one renewal comes while the call waits.
    const typingSince = () => telegram!.callsOf('sendChatAction').filter((call) => call.at > heldAt && call.params['chat_id'] === 77).length;
    await expect.poll(typingSince, { timeout: 15_000, interval: 50 }).toBeGreaterThanOrEqual(1);
    expect(telegram.sentTo(77)).toEqual([]);
    expect(
      telegram
        .callsOf('sendChatAction')
        .filter((call) => call.params['chat_id'] === 77)
        .every((call) => call.params['action'] === 'typing'),
    ).toBe(true);

    release!();
    const [reply] = await telegram.waitForMessages(1, { chatId: 77, timeoutMs: 15_000 });
    expect(reply!.text).toBe('Done: P-42 is in Lviv');
  });
});
