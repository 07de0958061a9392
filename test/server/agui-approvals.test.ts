import { afterEach, describe, expect, it } from 'vitest';
import { WebChannel } from '../../src/channels/web/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer, type RunningHttpServer } from '../../src/server/index.js';
import { ScriptedPipeline, type ScriptedPipelineOptions } from './scripted-pipeline.js';
import { assertValidAguiEvent, parseSse } from './sse.js';

const servers: RunningHttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const QUESTION = 'Before I go on, I need your yes:\nCancel the appointment on 3 March at 10:00';
const APPROVAL = { id: 'apv-1', expiresAt: '2030-03-01T11:00:00.000Z' };

async function start(options: ScriptedPipelineOptions = {}) {
  const channel = new WebChannel({ maxInboundChars: 200, logger: silentLogger(), cookieSecret: 's'.repeat(40) });
  const pipeline = new ScriptedPipeline(channel, { noTool: true, reply: QUESTION, approval: APPROVAL, ...options });
  await channel.start(pipeline);
  const app = createHttpApp({ health: async () => ({ database: { ok: true } }), logger: silentLogger(), routes: channel.routes });
  const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  servers.push(server);
  return { url: server.url, pipeline, channel };
}

/** A browser visitor: the signed cookie the page gives, and the account id the server derives from it. */
async function visitor(url: string): Promise<{ cookie: string; accountId: string }> {
  const response = await fetch(`${url}/`);
  await response.text();
  const cookie = (response.headers.get('set-cookie') ?? '').split(';')[0]!;
  const value = cookie.slice(cookie.indexOf('=') + 1);
  return { cookie, accountId: `visitor:${value.split('.')[1]}` };
}

function runBody(threadId: string, extra: Record<string, unknown> = {}) {
  return {
    threadId,
    runId: `run-${Math.random().toString(36).slice(2)}`,
    messages: [{ id: 'u1', role: 'user', content: 'Cancel my appointment on Monday, please.' }],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
    ...extra,
  };
}

/** A run that answers an approval request: no message, only `forwardedProps.approval`. */
function decisionBody(threadId: string, approval: unknown, forwardedProps: Record<string, unknown> = {}) {
  return {
    threadId,
    runId: `decision-${Math.random().toString(36).slice(2)}`,
    messages: [],
    tools: [],
    context: [],
    state: {},
    forwardedProps: { ...forwardedProps, approval },
  };
}

function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${url}/agui`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

async function events(response: Response) {
  const list = parseSse(await response.text());
  list.forEach(assertValidAguiEvent);
  return list;
}

function texts(list: Awaited<ReturnType<typeof events>>): string {
  return list
    .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
    .map((e) => e.delta)
    .join('');
}

describe('approval requests over AG-UI', () => {
  it('follows a question part with a CUSTOM palaver.approval_requested event naming the request, its summary and expiry', async () => {
    const { url } = await start();
    const me = await visitor(url);
    const list = await events(await post(url, runBody('thread-a'), { cookie: me.cookie }));
    expect(texts(list)).toBe(QUESTION);
    const custom = list.filter((e) => e.type === 'CUSTOM' && e.name === 'palaver.approval_requested');
    expect(custom).toHaveLength(1);
    expect(custom[0]?.value).toEqual({ approvalId: 'apv-1', summary: QUESTION, expiresAt: '2030-03-01T11:00:00.000Z' });
    // After the question's text, before the run ends.
    const at = list.indexOf(custom[0]!);
    expect(list.findIndex((e) => e.type === 'TEXT_MESSAGE_END')).toBeLessThan(at);
    expect(list.at(-1)?.type).toBe('RUN_FINISHED');
  });

  it('sends no such event for a part that asks nothing', async () => {
    const { url } = await start({ approval: undefined, reply: 'It is 10:30.' });
    const me = await visitor(url);
    const wire = await (await post(url, runBody('thread-a'), { cookie: me.cookie })).text();
    expect(wire).not.toContain('palaver.approval_requested');
  });

  it('passes a forwardedProps.approval run on as a decision of the caller, and streams the reply of the turn that goes on', async () => {
    const { url, pipeline } = await start();
    const me = await visitor(url);
    await events(await post(url, runBody('thread-a'), { cookie: me.cookie }));

    const body = decisionBody('thread-a', { id: 'apv-1', decision: 'approve' });
    const response = await post(url, body, { cookie: me.cookie });
    expect(response.status).toBe(200);
    const list = await events(response);
    expect(pipeline.decisions).toEqual([{ accountId: me.accountId, approvalId: 'apv-1', decision: 'approved', messageId: body.runId }]);
    // The decision is no message of the person's: nothing was accepted for it.
    expect(pipeline.received).toHaveLength(1);
    expect(texts(list)).toBe('Done: the appointment is cancelled.');
    expect(list[0]).toMatchObject({ type: 'RUN_STARTED', runId: body.runId });
    expect(list.at(-1)).toMatchObject({ type: 'RUN_FINISHED', runId: body.runId, result: { status: 'completed' } });
  });

  it('decides for the verified caller only: another visitor is passed on as themselves and refused, whatever the body says', async () => {
    const { url, pipeline } = await start();
    const owner = await visitor(url);
    const other = await visitor(url);
    expect(other.accountId).not.toBe(owner.accountId);
    await events(await post(url, runBody('thread-owner'), { cookie: owner.cookie }));
    // The other visitor has a conversation of their own (which asks nothing).
    pipeline.script({ approval: undefined, reply: 'Hello.' });
    await events(await post(url, runBody('thread-other'), { cookie: other.cookie }));

    // Naming the owner anywhere in the body changes nothing: the decision is the cookie's.
    const forged = decisionBody('thread-other', { id: 'apv-1', decision: 'approve' }, { accountId: owner.accountId, visitor: owner.accountId });
    const list = await events(await post(url, forged, { cookie: other.cookie, 'accept-language': 'en' }));
    expect(pipeline.decisions).toEqual([{ accountId: other.accountId, approvalId: 'apv-1', decision: 'approved', messageId: forged.runId }]);
    expect(texts(list)).toBe('Only the person who was asked can decide this.');
    expect(list.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'approval_not_yours' } });

    // Answering on the owner's conversation is refused as any run there: it is not theirs.
    const intruding = await post(url, decisionBody('thread-owner', { id: 'apv-1', decision: 'approve' }), { cookie: other.cookie });
    expect(intruding.status).toBe(403);
    expect(await intruding.json()).toMatchObject({ error: { code: 'forbidden' } });
    // A browser that names a user is refused before anything is decided.
    const naming = await post(url, decisionBody('thread-other', { id: 'apv-1', decision: 'approve' }, { userId: 'owner' }), { cookie: other.cookie });
    expect(naming.status).toBe(403);
    expect(pipeline.decisions).toHaveLength(1);

    // The owner still decides.
    const mine = await events(await post(url, decisionBody('thread-owner', { id: 'apv-1', decision: 'decline' }), { cookie: owner.cookie }));
    expect(pipeline.decisions.at(-1)).toMatchObject({ accountId: owner.accountId, decision: 'declined' });
    expect(texts(mine)).toBe('All right, I left it as it is.');
  });

  it.each([
    ['a decision word it does not know', { id: 'apv-1', decision: 'yes' }, 'forwardedProps.approval.decision'],
    ['no id', { decision: 'approve' }, 'forwardedProps.approval.id'],
    ['an empty id', { id: '', decision: 'approve' }, 'forwardedProps.approval.id'],
    ['an id that is no string', { id: 42, decision: 'approve' }, 'forwardedProps.approval.id'],
    ['a NUL in the id', { id: 'apv\u00001', decision: 'approve' }, 'forwardedProps.approval.id'],
    ['more fields', { id: 'apv-1', decision: 'approve', accountId: 'visitor:x' }, 'forwardedProps.approval'],
    ['null', null, 'forwardedProps.approval'],
    ['a string', 'approve apv-1', 'forwardedProps.approval'],
  ])('refuses an approval with %s (400 invalid_input), deciding nothing', async (_what, approval, field) => {
    const { url, pipeline } = await start();
    const me = await visitor(url);
    await events(await post(url, runBody('thread-a'), { cookie: me.cookie }));
    const response = await post(url, decisionBody('thread-a', approval), { cookie: me.cookie });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_input');
    expect(body.error.message).toContain(field);
    expect(pipeline.decisions).toEqual([]);
  });

  it.each([
    [{ kind: 'already', status: 'approved' } as const, 'This was already decided.', 'approval_already'],
    [{ kind: 'expired' } as const, '⌛ No answer in time: not done', 'approval_expired'],
    [{ kind: 'refused', reason: 'operator' } as const, 'A member of our team decides this one.', 'approval_operator'],
    [{ kind: 'not_found' } as const, 'This request is no longer open.', 'approval_unknown'],
  ])('ends a run whose decision came to %j at once, with a short text', async (outcome, text, status) => {
    const { url, pipeline } = await start({ approvalOutcome: outcome });
    const me = await visitor(url);
    await events(await post(url, runBody('thread-a'), { cookie: me.cookie }));
    const list = await events(await post(url, decisionBody('thread-a', { id: 'apv-1', decision: 'approve' }), { cookie: me.cookie, 'accept-language': 'en' }));
    expect(texts(list)).toBe(text);
    expect(list.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status } });
    expect(pipeline.decisions).toHaveLength(1);
  });

  it("says it in the person's language", async () => {
    const { url } = await start({ approvalOutcome: { kind: 'expired' } });
    const me = await visitor(url);
    await events(await post(url, runBody('thread-a'), { cookie: me.cookie }));
    const list = await events(
      await post(url, decisionBody('thread-a', { id: 'apv-1', decision: 'approve' }), { cookie: me.cookie, 'accept-language': 'ru-RU,ru;q=0.9' }),
    );
    expect(texts(list)).toMatch(/[а-я]/);
  });

  it('refuses a decision on a conversation that does not exist (404)', async () => {
    const { url, pipeline } = await start();
    const me = await visitor(url);
    const response = await post(url, decisionBody('thread-none', { id: 'apv-1', decision: 'approve' }), { cookie: me.cookie });
    expect(response.status).toBe(404);
    expect(pipeline.decisions).toEqual([]);
  });
});
