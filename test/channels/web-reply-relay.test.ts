import { afterEach, describe, expect, it } from 'vitest';
import { WebChannel } from '../../src/channels/web/index.js';
import { LocalBus } from '../../src/cluster/local-bus.js';
import type { ClusterBus, ClusterMessage, ClusterTopic } from '../../src/domain/ports/cluster-bus.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer, type RunningHttpServer } from '../../src/server/index.js';
import { AguiView, readAguiEvents } from './agui-client.js';
import { answer, FakeChannelContext, targetFor } from './fake-pipeline.js';

// Two web channels (two processes) on one bus: the run's stream is on B, the turn is answered on A.

/** A bus that loses the messages `drop` picks, as a reconnecting LISTEN connection would. */
class LossyBus implements ClusterBus {
  readonly #inner = new LocalBus();
  readonly published: ClusterMessage[] = [];
  constructor(readonly drop: (message: ClusterMessage, index: number) => boolean = () => false) {}
  async publish(topic: ClusterTopic, message: ClusterMessage): Promise<void> {
    const index = this.published.push(message) - 1;
    if (!this.drop(message, index)) await this.#inner.publish(topic, message);
  }
  get processId(): string {
    return this.#inner.processId;
  }
  subscribe(topic: ClusterTopic, listener: (message: ClusterMessage, from: string) => void) {
    return this.#inner.subscribe(topic, listener);
  }
  onReconnect(listener: () => void) {
    return this.#inner.onReconnect(listener);
  }
  close() {
    return this.#inner.close();
  }
}

const servers: RunningHttpServer[] = [];
const reads: Promise<void>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await Promise.all(reads.splice(0));
});

async function twoProcesses(bus: ClusterBus, options: { storedReplyCheckMs?: number } = {}) {
  const a = new WebChannel({ maxInboundChars: 100_000, logger: silentLogger(), webDir: false, bus });
  const b = new WebChannel({ maxInboundChars: 100_000, logger: silentLogger(), webDir: false, bus, ...options });
  const contextA = new FakeChannelContext();
  const contextB = new FakeChannelContext();
  await a.start(contextA);
  await b.start(contextB);
  const server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: b.routes }), { host: '127.0.0.1', port: 0 });
  servers.push(server);
  const view = new AguiView();
  let ended!: () => void;
  const done = new Promise<void>((resolve) => (ended = resolve));
  /** Posts a run to B and reads it as the page does. */
  const post = async (threadId: string, runId: string, text: string) => {
    const response = await fetch(`${server.url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId,
        runId,
        messages: [{ id: `u-${runId}`, role: 'user', content: text }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
      }),
    });
    expect(response.status).toBe(200);
    const read = readAguiEvents(response, (event) => view.apply(runId, event)).finally(ended);
    reads.push(read.catch(() => undefined));
  };
  return { a, b, contextA, contextB, view, post, done };
}

describe('web reply relay between two processes', () => {
  it('shows a turn answered by the other process as that process would: tool line, streamed text, the reply once', async () => {
    const bus = new LossyBus();
    const { a, contextA, contextB, view, post, done } = await twoProcesses(bus);
    await post('thread-1', 'run-1', 'What time is it?');
    const [message] = await contextB.waitForMessages(1);
    await answer(a, contextA, [message!], { tool: { name: 'clock', arguments: '{}', result: '10:30' }, stream: ['It is ', '10:30.'], parts: ['It is 10:30.'] });
    await done;
    expect(view.messages.map((m) => m.text)).toEqual(['It is 10:30.']);
    const run = view.runs.get('run-1')!;
    // Streamed (deltas queued behind a publish on its way travel joined), then the sent part adds nothing.
    expect(
      run.events
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e['delta'])
        .join(''),
    ).toBe('It is 10:30.');
    expect(run.events.filter((e) => e.type === 'TEXT_MESSAGE_START')).toHaveLength(1);
    expect(run.events.some((e) => e.type === 'CUSTOM' && e['name'] === 'palaver.tool_progress')).toBe(true);
    expect(run.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed' } });
  });

  it('relays a question part with its approval: the run on the other process shows the text, then palaver.approval_requested', async () => {
    const bus = new LossyBus();
    const { a, contextA, contextB, view, post, done } = await twoProcesses(bus);
    await post('thread-1', 'run-1', 'Cancel my booking');
    const [message] = await contextB.waitForMessages(1);
    const target = targetFor(a, contextA, [message!]);
    const question = 'Before I go on, I need your yes:\nCancel booking 7';
    const part = await a.send(target, question, { deliveryKey: 'd-1', approval: { id: 'apv-7', expiresAt: '2030-01-01T00:00:00.000Z' } });
    a.settle(target, {
      kind: 'answered',
      parts: [part],
      outcome: {
        correlationId: target.correlationId,
        sessionId: target.sessionId,
        userId: 'u',
        reply: question,
        replyMessageId: 'reply-1',
        status: 'completed',
        usage: { inputTokens: 1, outputTokens: 1, cost: '0', currency: 'USD' },
      },
    });
    await done;
    const events = view.runs.get('run-1')!.events;
    const custom = events.filter((e) => e.type === 'CUSTOM' && e['name'] === 'palaver.approval_requested');
    expect(custom.map((e) => e['value'])).toEqual([{ approvalId: 'apv-7', summary: question, expiresAt: '2030-01-01T00:00:00.000Z' }]);
    expect(events.findIndex((e) => e.type === 'TEXT_MESSAGE_END')).toBeLessThan(events.indexOf(custom[0]!));
    expect(view.messages.map((m) => m.text)).toEqual([question]);
  });

  it('ends a run that lost a relayed event showing exactly the reply, not the part of it that arrived', async () => {
    // The first of two sent messages never arrives.
    const bus = new LossyBus((message) => JSON.stringify(message['op'] ?? '').includes('"text":"First.'));
    const { a, contextA, contextB, view, post, done } = await twoProcesses(bus);
    await post('thread-1', 'run-1', 'Two things?');
    const [message] = await contextB.waitForMessages(1);
    await answer(a, contextA, [message!], { parts: ['First.', 'Second.'] });
    await done;
    expect(view.messages.map((m) => m.text)).toEqual(['First.\nSecond.']);
    expect(view.runs.get('run-1')!.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed' } });
  });

  it('ends a run whose turn end was lost with the stored reply, read from the store without accepting the message again', async () => {
    const bus = new LossyBus((message) => JSON.stringify(message['op'] ?? '').includes('"kind":"settle"'));
    const { a, contextA, contextB, view, post, done } = await twoProcesses(bus, { storedReplyCheckMs: 30 });
    await post('thread-1', 'run-1', 'Hello?');
    const [message] = await contextB.waitForMessages(1);
    // What the store holds for the run once its turn answered it.
    contextB.storedReplies.set('run-1', {
      sessionId: 'session-thread-1',
      correlationId: 'corr-1',
      replyMessageId: 'reply-1',
      text: 'Hello there.',
      status: 'completed',
    });
    await answer(a, contextA, [message!], { stream: ['Hello ', 'there.'], parts: ['Hello there.'] });
    await done;
    expect(view.messages.map((m) => m.text)).toEqual(['Hello there.']);
    expect(view.runs.get('run-1')!.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed', replyMessageId: 'reply-1' } });
    // Asked as often as it waited, and never handed to the pipeline a second time (no duplicate logged or counted).
    expect(contextB.received).toHaveLength(1);
  });

  it('carries a reply larger than one bus message in pieces, every character intact', async () => {
    const bus = new LossyBus();
    const { a, contextA, contextB, view, post, done } = await twoProcesses(bus);
    const reply = `${'Ünïcödé 🙂 "quoted" \\ line\n'.repeat(900)}end`;
    await post('thread-1', 'run-1', 'Tell me a long story');
    const [message] = await contextB.waitForMessages(1);
    await answer(a, contextA, [message!], { parts: [reply] });
    await done;
    expect(view.messages.map((m) => m.text)).toEqual([reply]);
    expect(bus.published.every((m) => Buffer.byteLength(JSON.stringify(m)) <= 7_000)).toBe(true);
    expect(bus.published.filter((m) => m['kind'] === 'piece').length).toBeGreaterThan(2);
  });

  it('joins text deltas that queue behind a publish on its way: fewer bus messages, the same text in order', async () => {
    // Each publish takes a turn of the event loop, as a round trip to PostgreSQL does.
    const bus = new LossyBus();
    const publish = bus.publish.bind(bus);
    bus.publish = async (topic, message) => {
      await new Promise((resolve) => setImmediate(resolve));
      return publish(topic, message);
    };
    const { a, contextA, contextB, view, post, done } = await twoProcesses(bus);
    await post('thread-1', 'run-1', 'Count to 200');
    const [message] = await contextB.waitForMessages(1);
    const words = Array.from({ length: 200 }, (_, i) => `${i + 1} `);
    await answer(a, contextA, [message!], { stream: words, parts: [words.join('').trim()] });
    await done;
    expect(view.messages.map((m) => m.text.trim())).toEqual([words.join('').trim()]);
    const deltaMessages = bus.published.filter((m) => JSON.stringify(m['op'] ?? '').includes('text_delta'));
    expect(deltaMessages.length).toBeLessThan(20);
  });

  it("routes by conversation: a turn of another thread with the same run id shows nothing on this thread's run", async () => {
    const bus = new LossyBus();
    const { a, contextA, contextB, view, post } = await twoProcesses(bus);
    await post('thread-mine', 'run-1', 'Mine');
    const [mine] = await contextB.waitForMessages(1);
    // Another conversation's turn answering a run of the same id, and a forged message naming no stream here.
    await answer(a, contextA, [{ ...mine!, conversationId: 'thread-theirs', accountId: 'someone-else' }], { stream: ['secret'], parts: ['Their secret.'] });
    await bus.publish('reply', {
      kind: 'event',
      v: 1,
      channel: 'web',
      origin: 'x',
      conversationId: 'thread-mine',
      runs: ['run-1'],
      turn: 't',
      session: 's',
      seq: 0,
      op: { kind: 'nonsense' },
    });
    expect(view.messages).toEqual([]);
    expect(view.openRuns).toBe(1);
    await answer(a, contextA, [mine!], { parts: ['Yours.'] });
    await expect.poll(() => view.messages.map((m) => m.text)).toEqual(['Yours.']);
  });
});
