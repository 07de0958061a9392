import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Palaver } from '../../src/app.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import type { ScriptedCall } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { events, newVisitor, postRun, runInput, send, shownText, type RawResponse } from '../security/attack-kit.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await harness?.close();
  harness = undefined;
});

/** A cancel tool that needs the person's yes, recording every run. */
function salon() {
  const runs: string[] = [];
  const cancel = defineTool({
    name: 'cancel_appointment',
    description: 'Cancels an appointment',
    input: z.object({ appointment_id: z.string() }),
    approval: 'person',
    describe: ({ appointment_id }) => `Cancel appointment ${appointment_id}`,
    run: ({ appointment_id }) => {
      runs.push(appointment_id);
      return `Appointment ${appointment_id} cancelled.`;
    },
  });
  return { runs, cancel };
}

/** Asks to cancel when told to; then answers with what the tool said; otherwise says hello. */
function cancellingModel(call: ScriptedCall) {
  const result = [...call.messages].reverse().find((item) => item.type === 'tool_result') as { output?: string } | undefined;
  if (result) return { text: `Done: ${result.output}` };
  const asked = call.messages.some((item) => item.type === 'message' && 'role' in item && item.role === 'user' && String(item.content).includes('cancel'));
  if (!asked) return { text: 'Hello.' };
  return { text: 'Let me cancel that.', toolCalls: [{ name: 'cancel_appointment', arguments: { appointment_id: 'a-17' } }] };
}

async function start(now?: () => Date): Promise<{ palaver: Palaver; url: string; runs: string[] }> {
  const { runs, cancel } = salon();
  harness = await createHarness(cancellingModel);
  const palaver = await harness.start({ tools: { approvalTimeoutMinutes: 5 } }, { tools: [cancel], ...(now === undefined ? {} : { now }) });
  server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  return { palaver, url: server.url, runs };
}

/** A run that answers an approval request: no message, only `forwardedProps.approval`. */
function decisionRun(threadId: string, id: string, decision: 'approve' | 'decline'): Record<string, unknown> {
  return runInput(threadId, '', { messages: [], forwardedProps: { approval: { id, decision } } });
}

function approvalEvents(run: RawResponse) {
  return events(run).filter((event) => event.type === 'CUSTOM' && event['name'] === 'palaver.approval_requested');
}

/** The person asks; the question comes back with its request. */
async function ask(url: string, cookie: string, threadId: string) {
  const run = await postRun(url, runInput(threadId, 'please cancel my appointment'), { cookie, 'accept-language': 'en' });
  expect(run.status).toBe(200);
  const [requested] = approvalEvents(run);
  return { run, value: requested?.['value'] as { approvalId: string; summary: string; expiresAt: string } };
}

async function sessionOf(palaver: Palaver, threadId: string): Promise<string> {
  return (await palaver.store.sessions.findByConversation('web', threadId))!.id;
}

describe('approvals on the web through a real Palaver', () => {
  it('asks with the question and a palaver.approval_requested event, runs nothing; approving streams the answer with the result, the tool runs once', async () => {
    const { palaver, url, runs } = await start();
    const me = await newVisitor(url);
    const { run, value } = await ask(url, me.cookie, 't-approve');
    expect(shownText(run)).toContain('Cancel appointment a-17');
    expect(approvalEvents(run)).toHaveLength(1);
    const pending = (await palaver.store.approvals.pendingFor(await sessionOf(palaver, 't-approve')))!;
    expect(value).toEqual({ approvalId: pending.id, summary: expect.stringContaining('Cancel appointment a-17'), expiresAt: pending.expiresAt.toISOString() });
    expect(events(run).at(-1)).toMatchObject({ type: 'RUN_FINISHED' });
    expect(runs).toEqual([]);
    expect(harness!.model.calls).toHaveLength(1);

    const answer = await postRun(url, decisionRun('t-approve', value.approvalId, 'approve'), { cookie: me.cookie });
    expect(answer.status).toBe(200);
    expect(shownText(answer)).toContain('Done: Appointment a-17 cancelled.');
    expect(events(answer).at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed' } });
    expect(runs).toEqual(['a-17']);
    expect(harness!.model.calls).toHaveLength(2);
    expect((await palaver.store.approvals.get(value.approvalId))?.status).toBe('approved');

    // The same press again (a replayed run, a second tab): already decided, nothing runs again.
    const replayed = await postRun(url, decisionRun('t-approve', value.approvalId, 'approve'), { cookie: me.cookie, 'accept-language': 'en' });
    expect(shownText(replayed)).toBe('This was already decided.');
    expect(events(replayed).at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'approval_already', decision: 'approved' } });
    expect(runs).toEqual(['a-17']);
    expect(harness!.model.calls).toHaveLength(2);
  });

  it('declining never runs the tool; the model is told and its answer is streamed', async () => {
    const { palaver, url, runs } = await start();
    const me = await newVisitor(url);
    const { value } = await ask(url, me.cookie, 't-decline');
    const answer = await postRun(url, decisionRun('t-decline', value.approvalId, 'decline'), { cookie: me.cookie });
    expect(shownText(answer)).toContain('Declined by the person');
    expect(events(answer).at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed' } });
    expect(runs).toEqual([]);
    expect(harness!.model.calls).toHaveLength(2);
    expect((await palaver.store.approvals.get(value.approvalId))?.status).toBe('declined');
  });

  it("refuses another visitor's decision, on their own thread or on the owner's: nothing runs and the request stays open", async () => {
    const { palaver, url, runs } = await start();
    const owner = await newVisitor(url);
    const other = await newVisitor(url);
    const { value } = await ask(url, owner.cookie, 't-owner');
    const hello = await postRun(url, runInput('t-other', 'hi there'), { cookie: other.cookie });
    expect(shownText(hello)).toBe('Hello.');
    const calls = harness!.model.calls.length;

    const onTheirs = await postRun(url, decisionRun('t-other', value.approvalId, 'approve'), { cookie: other.cookie, 'accept-language': 'en' });
    expect(onTheirs.status).toBe(200);
    expect(shownText(onTheirs)).toBe('Only the person who was asked can decide this.');
    expect(events(onTheirs).at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'approval_not_yours' } });

    const onOwners = await postRun(url, decisionRun('t-owner', value.approvalId, 'approve'), { cookie: other.cookie });
    expect(onOwners.status).toBe(403);

    expect(runs).toEqual([]);
    expect(harness!.model.calls).toHaveLength(calls);
    expect((await palaver.store.approvals.get(value.approvalId))?.status).toBe('pending');
    // Not even the owner from another of their conversations: the reply would go where nobody waits for it.
    const elsewhere = await postRun(url, runInput('t-owner-2', 'hi again'), { cookie: owner.cookie });
    expect(shownText(elsewhere)).toBe('Hello.');
    const fromThere = await postRun(url, decisionRun('t-owner-2', value.approvalId, 'approve'), { cookie: owner.cookie });
    expect(events(fromThere).at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'approval_not_yours' } });
    expect((await palaver.store.approvals.get(value.approvalId))?.status).toBe('pending');
    // The owner still decides, in the conversation it was asked in.
    const mine = await postRun(url, decisionRun('t-owner', value.approvalId, 'approve'), { cookie: owner.cookie });
    expect(shownText(mine)).toContain('Done: Appointment a-17 cancelled.');
    expect(runs).toEqual(['a-17']);
  });

  it('shows a still-open request in the transcript after a reload, and no longer once it is decided', async () => {
    const { url } = await start();
    const me = await newVisitor(url);
    const { value } = await ask(url, me.cookie, 't-reload');
    const read = async () =>
      JSON.parse((await send(url, { path: '/conversations/messages?id=t-reload', headers: { cookie: me.cookie } })).body) as {
        messages: Array<{ role: string; text: string; approval?: { id: string; expiresAt: string } }>;
      };
    const before = await read();
    const question = before.messages.find((message) => message.text.includes('Cancel appointment a-17'));
    expect(question).toMatchObject({ role: 'assistant', approval: { id: value.approvalId, expiresAt: value.expiresAt } });
    expect(before.messages.filter((message) => message.approval !== undefined)).toHaveLength(1);

    await postRun(url, decisionRun('t-reload', value.approvalId, 'approve'), { cookie: me.cookie });
    const after = await read();
    expect(after.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(after.messages.filter((message) => message.approval !== undefined)).toEqual([]);
  });

  it('offers no buttons in the transcript for a request whose time ran out, even before the expiry sweep declined it', async () => {
    let now = new Date('2026-12-07T10:00:00Z');
    const { palaver, url, runs } = await start(() => now);
    const me = await newVisitor(url);
    const { value } = await ask(url, me.cookie, 't-late');
    expect(value.expiresAt).toBe('2026-12-07T10:05:00.000Z');
    const read = async () =>
      (
        JSON.parse((await send(url, { path: '/conversations/messages?id=t-late', headers: { cookie: me.cookie } })).body) as {
          messages: Array<{ approval?: unknown }>;
        }
      ).messages;
    expect((await read()).filter((message) => message.approval !== undefined)).toHaveLength(1);
    now = new Date('2026-12-07T10:05:00Z');
    expect((await palaver.store.approvals.get(value.approvalId))?.status).toBe('pending');
    expect((await read()).filter((message) => message.approval !== undefined)).toEqual([]);
    expect(runs).toEqual([]);
  });
});
