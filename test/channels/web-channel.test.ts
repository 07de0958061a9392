import { afterEach, describe, expect, it } from 'vitest';
import { WebChannel } from '../../src/channels/web/index.js';
import { ChannelError } from '../../src/domain/errors.js';
import type { ReplyTarget } from '../../src/domain/ports/channel.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer } from '../../src/server/index.js';
import { AguiView, readAguiEvents, type AguiEvent } from './agui-client.js';
import { runChannelContract, type ChannelDriver } from './channel-contract.js';
import { FakeChannelContext, targetFor } from './fake-pipeline.js';

/** A person using the web chat over real HTTP: each message is an AG-UI run, read as the page reads it. */
async function webDriver(): Promise<ChannelDriver> {
  const channel = new WebChannel({ maxInboundChars: 1000, logger: silentLogger(), webDir: false });
  const server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), {
    host: '127.0.0.1',
    port: 0,
  });
  const views = new Map<string, AguiView>();
  const view = (name: string): AguiView => {
    const existing = views.get(name) ?? new AguiView();
    views.set(name, existing);
    return existing;
  };
  const reads: Promise<void>[] = [];
  let runs = 0;
  const post = async (name: string, text: string): Promise<void> => {
    const runId = `run-${++runs}`;
    const response = await fetch(`${server.url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: `thread-${name}`,
        runId,
        messages: [{ id: `u-${runId}`, role: 'user', content: text }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
      }),
    });
    if (!response.ok) {
      const body = (await response.json()) as { error: { message: string } };
      view(name).errors.push(body.error.message);
      return;
    }
    view(name).runs.set(runId, { events: [], ended: false });
    reads.push(readAguiEvents(response, (event) => view(name).apply(runId, event)).catch(() => undefined));
  };
  return {
    channel,
    manyConversations: true,
    acceptsWhileAnswering: true,
    attachesRetries: true,
    conversationId: (name) => `thread-${name}`,
    say: post,
    replies: (name) => view(name).messages.map((m) => m.text),
    errors: (name) => view(name).errors,
    waiting: (name) => view(name).openRuns,
    sayAfterStop: post,
    close: async () => {
      await server.close();
      await Promise.all(reads);
    },
  };
}

runChannelContract('web (AG-UI over SSE)', webDriver);

describe('WebChannel: replies as actions', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  /** A web channel on the fake pipeline, one run opened by a person: the target to answer it and what they see. */
  async function openRun(text = 'Can I book for Friday?') {
    const channel = new WebChannel({ maxInboundChars: 1000, logger: silentLogger(), webDir: false });
    const context = new FakeChannelContext();
    await channel.start(context);
    const server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), {
      host: '127.0.0.1',
      port: 0,
    });
    const client = new AbortController();
    const response = await fetch(`${server.url}/agui`, {
      method: 'POST',
      signal: client.signal,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: 'thread-a',
        runId: 'run-7',
        messages: [{ id: 'u-1', role: 'user', content: text }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
      }),
    });
    const view = new AguiView();
    const events: AguiEvent[] = [];
    const read = readAguiEvents(response, (event) => {
      events.push(event);
      view.apply('run-7', event);
    });
    closers.push(async () => {
      await server.close();
      await read.catch(() => undefined);
    });
    const [message] = await context.waitForMessages(1);
    const target: ReplyTarget = targetFor(channel, context, [message!]);
    const settle = (): void =>
      channel.settle(target, {
        kind: 'answered',
        parts: [],
        outcome: {
          correlationId: target.correlationId,
          sessionId: target.sessionId,
          userId: 'u',
          reply: '',
          replyMessageId: 'reply-1',
          status: 'completed',
          usage: { inputTokens: 0, outputTokens: 0, cost: '0', currency: 'USD' },
        },
      });
    return { channel, message: message!, target, view, events, read, settle, leave: () => client.abort() };
  }

  it("shows typing, two sends as two messages, and a reaction on the person's message, in order", async () => {
    const { channel, message, target, view, events, read, settle } = await openRun();
    // The id the model sees for the person's message is the AG-UI run id: a reaction names it.
    expect(message.messageId).toBe('run-7');
    expect(channel.capabilities).toMatchObject({ typing: true, reactions: true });

    await channel.typing(target);
    const first = await channel.send(target, 'Friday works.', { deliveryKey: 'd-1' });
    await channel.typing(target);
    const second = await channel.send(target, 'Morning or afternoon?', { deliveryKey: 'd-2', replyTo: 'run-7' });
    await channel.react(target, 'run-7', '👍');
    settle();
    await read;

    const shape = events.map((e) => (e.type === 'CUSTOM' ? `CUSTOM ${String(e.name)}` : e.type));
    expect(shape).toEqual([
      'RUN_STARTED',
      'CUSTOM palaver.typing',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'CUSTOM palaver.typing',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'CUSTOM palaver.reaction',
      'RUN_FINISHED',
    ]);
    expect(events[1]).toMatchObject({ value: { seconds: 5 } });
    expect(events[9]).toMatchObject({ value: { messageId: 'run-7', emoji: '👍' } });
    expect(view.messages).toEqual([
      { id: first.messageId, text: 'Friday works.' },
      { id: second.messageId, text: 'Morning or afternoon?' },
    ]);
    expect(first.messageId).not.toBe(second.messageId);
    expect(view.reactions).toEqual(new Map([['run-7', '👍']]));
    expect(view.typing).toBe(false);
  });

  it('refuses a reaction that is not one emoji and shows nothing of it', async () => {
    const { channel, target, events, read, settle } = await openRun();
    for (const emoji of ['<img src=x onerror=alert(1)>', 'thumbs up', '👍👍', '', '\u001b[2J']) {
      await expect(channel.react(target, 'run-7', emoji)).rejects.toMatchObject({ code: 'invalid_reaction' });
    }
    await expect(channel.react(target, 'x'.repeat(300), '👍')).rejects.toBeInstanceOf(ChannelError);
    await channel.react(target, 'run-7', '❤️');
    settle();
    await read;
    expect(events.filter((e) => e.type === 'CUSTOM')).toEqual([{ type: 'CUSTOM', name: 'palaver.reaction', value: { messageId: 'run-7', emoji: '❤️' } }]);
  });

  it('leaves the streamed text reply as it was: no typing while it streams, one message', async () => {
    const { channel, target, view, events, read, settle } = await openRun();
    await channel.typing(target);
    channel.progress(target, { type: 'text_delta', messageId: 'draft', delta: 'Friday ' });
    // The pipeline renews typing while the reply is written; the growing message already shows it.
    await channel.typing(target);
    channel.progress(target, { type: 'text_delta', messageId: 'draft', delta: 'works.' });
    await channel.send(target, 'Friday works.', { deliveryKey: 'd-1' });
    settle();
    await read;
    expect(events.filter((e) => e.type === 'CUSTOM').map((e) => e.name)).toEqual(['palaver.typing']);
    expect(view.messages.map((m) => m.text)).toEqual(['Friday works.']);
  });

  it('drops typing quietly once the person has left, and says a reaction could not be shown', async () => {
    const { channel, target, read, leave } = await openRun();
    leave();
    await read.catch(() => undefined);
    await expect.poll(() => channel.send(target, 'Anyone?', { deliveryKey: 'd-1' }).catch((error: ChannelError) => error.code)).toBe('client_gone');
    await expect(channel.typing(target)).resolves.toBeUndefined();
    await expect(channel.react(target, 'run-7', '👍')).rejects.toMatchObject({ code: 'client_gone' });
  });
});
