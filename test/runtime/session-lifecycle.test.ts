import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Palaver } from '../../src/app.js';
import { MAX_TITLE_CHARS, titleFrom } from '../../src/runtime/pipeline/title.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import type { ScriptedCall, ScriptedReply } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { readAguiEvents, type AguiEvent } from '../channels/agui-client.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  await harness?.close();
  server = undefined;
  harness = undefined;
});

let runs = 0;
/** One AG-UI run over HTTP, as the chat page posts it; `onEvent` sees each event as it arrives. Resolves with all of them. */
async function postRun(base: string, threadId: string, text: string, onEvent: (event: AguiEvent) => void = () => {}): Promise<AguiEvent[]> {
  const runId = `run-${++runs}`;
  const response = await fetch(`${base}/agui`, {
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
  const events: AguiEvent[] = [];
  await readAguiEvents(response, (event) => {
    events.push(event);
    onEvent(event);
  });
  return events;
}

function shownText(events: readonly AguiEvent[]): string {
  return events.flatMap((event) => (event.type === 'TEXT_MESSAGE_CONTENT' ? [String(event['delta'])] : [])).join('');
}

async function transcript(base: string, threadId: string): Promise<Array<{ role: string; text: string }>> {
  const response = await fetch(`${base}/conversations/messages?id=${encodeURIComponent(threadId)}`);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { messages: Array<{ role: string; text: string }> };
  return body.messages.map(({ role, text }) => ({ role, text }));
}

describe('session title', () => {
  it('is the first line with text, cut on a word boundary with an ellipsis within 255 characters', () => {
    expect(titleFrom('\n  Book a haircut  \nfor Monday')).toBe('Book a haircut');
    const words = Array.from({ length: 80 }, (_, index) => `word${index}`).join(' ');
    const title = titleFrom(words);
    expect([...title].length).toBeLessThanOrEqual(MAX_TITLE_CHARS);
    expect(title.endsWith('…')).toBe(true);
    expect(words.startsWith(title.slice(0, -1))).toBe(true);
    expect(words[title.length - 1]).toBe(' '); // the cut is at a space, not inside a word
    const exact = 'a'.repeat(MAX_TITLE_CHARS);
    expect(titleFrom(exact)).toBe(exact);
    // No space at all (Chinese writes none): a hard cut, never a broken character.
    const chinese = '预约'.repeat(200);
    expect(titleFrom(chinese)).toBe(`${'预约'.repeat(127)}…`);
    expect(titleFrom(`${'😀'.repeat(300)}`)).toBe(`${'😀'.repeat(254)}…`);
    expect(titleFrom(' \n ')).toBe('');
  });

  it('is set once from the first input and never changed later', async () => {
    harness = await createHarness(() => ({ text: 'Sure.' }));
    const palaver = await harness.start();
    const opener = `${'Please find me a haircut appointment with Anna '.repeat(8)}\nsecond line`;
    const { sessionId } = await palaver.chat({ userId: 'alice', text: opener });
    const title = (await palaver.store.sessions.findById(sessionId))!.title!;
    expect(title).toBe(titleFrom(opener));
    expect([...title].length).toBeLessThanOrEqual(255);
    expect(title.length).toBeGreaterThan(200);
    expect(title).not.toContain('second line');

    await palaver.chat({ userId: 'alice', text: 'Something else entirely' });
    expect((await palaver.store.sessions.findById(sessionId))!.title).toBe(title);
  });
});

describe('session life cycle over AG-UI', () => {
  it('RUN_STARTED comes while the session is running; RUN_FINISHED says completed; a failed turn ends with RUN_ERROR carrying the error id the person sees', async () => {
    let palaver: Palaver | undefined;
    let started: (event: AguiEvent) => void = () => {};
    let runStarted = new Promise<AguiEvent>((resolve) => (started = resolve));
    const statusWhileAnswering: string[] = [];
    let fail = false;
    harness = await createHarness(async (): Promise<ScriptedReply> => {
      // The model answers only once the page has RUN_STARTED: it comes when the turn starts, not with the reply.
      const event = await runStarted;
      const sessionId = String((event['metadata'] as { sessionId: string }).sessionId);
      statusWhileAnswering.push((await palaver!.store.sessions.findById(sessionId))!.status);
      return fail ? { error: { status: 500, message: 'model down' } } : { text: 'Booked for Monday.' };
    });
    palaver = await harness.start();
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    const onEvent = (event: AguiEvent) => {
      if (event.type === 'RUN_STARTED') started(event);
    };

    const completed = await postRun(server.url, 'thread-life', 'Book me for Monday', onEvent);
    expect(completed[0]).toMatchObject({ type: 'RUN_STARTED', metadata: { sessionId: expect.any(String), correlationId: expect.any(String) } });
    const sessionId = String((completed[0]!['metadata'] as { sessionId: string }).sessionId);
    expect(completed.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed', sessionId } });
    expect(shownText(completed)).toBe('Booked for Monday.');
    expect(statusWhileAnswering).toEqual(['running']);
    expect((await palaver.store.sessions.findById(sessionId))!.status).toBe('completed');

    fail = true;
    runStarted = new Promise<AguiEvent>((resolve) => (started = resolve));
    const failed = await postRun(server.url, 'thread-life', 'And Tuesday?', onEvent);
    const end = failed.at(-1)!;
    expect(end).toMatchObject({
      type: 'RUN_ERROR',
      code: 'turn_failed',
      metadata: { status: 'failed', sessionId, errorId: expect.stringMatching(/^[0-9A-F]{8}$/) },
    });
    expect(failed.some((event) => event.type === 'RUN_FINISHED')).toBe(false);
    const errorId = (end['metadata'] as { errorId: string }).errorId;
    // The same id in the apology the person read, in the stored apology, and in the log.
    expect(shownText(failed)).toContain(`Error reference: ${errorId}`);
    expect(end['message']).toContain(`Error reference: ${errorId}`);
    const stored = await palaver.store.messages.listRecent(sessionId, { limit: 10, audience: 'display' });
    expect(stored.at(-1)!.meta).toMatchObject({ error: true, errorId });
    expect(harness.logs.some((line) => line['errorId'] === errorId && line['msg'] === 'turn failed')).toBe(true);
    expect(statusWhileAnswering).toEqual(['running', 'running']);
    expect((await palaver.store.sessions.findById(sessionId))!.status).toBe('failed');

    // Palaver.chat carries it too.
    runStarted = Promise.resolve(completed[0]!);
    const reply = await palaver.chat({ userId: 'bob', text: 'hello' });
    expect(reply).toMatchObject({ status: 'failed', errorId: expect.stringMatching(/^[0-9A-F]{8}$/) });
    expect(reply.text).toContain(`Error reference: ${reply.errorId}`);
  });
});

describe('GET /conversations/messages', () => {
  const saveNote = defineTool({
    name: 'save_note',
    description: 'Saves a note for the person',
    input: z.object({ text: z.string() }),
    run: ({ text }) => `saved "${text}"`,
  });

  /** The single flow saves a note with a tool; the staged flow answers through its three stages. */
  function script(call: ScriptedCall): ScriptedReply {
    switch (call.output?.name) {
      case 'intent':
        return { text: JSON.stringify({ direct: false, answer: null, intent: 'recall the note', details: 'buy milk' }) };
      case 'execution':
        return { text: JSON.stringify({ status: 'done', summary: 'The note says buy milk', facts: ['buy milk'] }) };
      case 'organization':
        return { text: JSON.stringify({ reply: 'Your note: buy milk.' }) };
    }
    if (call.messages.at(-1)?.type === 'tool_result') return { text: 'Saved your note.' };
    return { toolCalls: [{ name: 'save_note', arguments: { text: lastUserText(call)!.replace('note: ', '') } }] };
  }

  it('lists only the displayed messages, in order: no tool traffic, no stage outputs', async () => {
    harness = await createHarness(script);
    const single = await harness.start({}, { tools: [saveNote] });
    let web = await single.serve({ host: '127.0.0.1', port: 0 });
    const first = await postRun(web.url, 'thread-notes', 'note: buy milk');
    expect(shownText(first)).toBe('Saved your note.');
    await web.close();
    await single.close();

    // The same conversation, now answered by the staged flow (same database).
    const staged = await harness.start(
      {
        agent: { flow: 'staged', type: 'notes' },
        staged: {
          types: { notes: { intent: { name: 'intent-model' }, execution: { name: 'execution-model' }, organization: { name: 'organization-model' } } },
        },
      },
      { tools: [saveNote] },
    );
    web = await staged.serve({ host: '127.0.0.1', port: 0 });
    server = web;
    const second = await postRun(web.url, 'thread-notes', 'What did I save?');
    expect(shownText(second)).toBe('Your note: buy milk.');

    const sessionId = String((second[0]!['metadata'] as { sessionId: string }).sessionId);
    const all = await staged.store.messages.listRecent(sessionId, { limit: 50 });
    // The audit records are stored between the displayed messages: the tool call with its result, then the intent and execution outputs.
    expect(all.map((message) => [message.audience, message.role, message.meta?.['stage'] ?? null])).toEqual([
      ['display', 'user', null],
      ['audit', 'tool', null],
      ['display', 'assistant', null],
      ['display', 'user', null],
      ['audit', 'assistant', 'intent'],
      ['audit', 'assistant', 'execution'],
      ['display', 'assistant', null],
    ]);

    expect(await transcript(web.url, 'thread-notes')).toEqual([
      { role: 'user', text: 'note: buy milk' },
      { role: 'assistant', text: 'Saved your note.' },
      { role: 'user', text: 'What did I save?' },
      { role: 'assistant', text: 'Your note: buy milk.' },
    ]);
  });
});
