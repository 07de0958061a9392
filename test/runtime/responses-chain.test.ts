import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Palaver } from '../../src/app.js';
import { defineTool } from '../../src/tools/define-tool.js';
import type { ModelScript } from '../../src/testing/index.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const lookup = defineTool({ name: 'lookup', description: 'Looks something up', input: z.object({ q: z.string() }), run: ({ q }) => `found ${q}` });

/** Uses the tool once per user message, then answers; `failing` makes the named model answer 500. */
function chainScript(failing: { model?: string } = {}): ModelScript {
  return (call) => {
    if (call.model === failing.model) return { error: { status: 500, message: 'primary is down' } };
    const last = call.messages[call.messages.length - 1];
    if (last?.type === 'tool_result') return { text: `answer after ${last.output}` };
    if (call.toolNames.includes('lookup')) return { toolCalls: [{ name: 'lookup', arguments: { q: lastUserText(call) ?? '' } }] };
    return { text: `plain answer from ${call.model}` };
  };
}

async function state(palaver: Palaver, accountId: string) {
  const { user } = await palaver.store.users.resolveAccount({ channel: 'api', accountId });
  return JSON.parse((await palaver.store.userState.get(user.id))!.raw) as { responseChainId: string | null };
}

async function lastReply(palaver: Palaver, sessionId: string) {
  const messages = await palaver.store.messages.listRecent(sessionId, { limit: 1 });
  return messages[0]!;
}

const responses = { model: { provider: 'openai-responses', fallback: { name: 'backup' } } };

describe('Responses API chains', () => {
  it('continues from previous_response_id after a successful call with tools, sending only the new message', async () => {
    harness = await createHarness(chainScript());
    const palaver = await harness.start(responses, { tools: [lookup] });
    await palaver.chat({ userId: 'uma', text: 'first question' });
    const chainId = (await state(palaver, 'uma')).responseChainId;
    expect(chainId).toMatch(/^resp_/);

    const reply = await palaver.chat({ userId: 'uma', text: 'second question' });
    const next = harness.model.calls[2]!;
    expect(next.previousResponseId).toBe(chainId);
    expect(next.messages).toEqual([{ type: 'message', role: 'user', content: 'second question' }]);
    // The tool round inside the turn continues the chain too, sending only the tool output.
    expect(harness.model.calls[3]!.messages.map((item) => item.type)).toEqual(['tool_result']);
    expect(reply.text).toBe('answer after found second question');
    expect((await lastReply(palaver, reply.sessionId)).meta).toMatchObject({ paths: ['chain', 'chain'], fallback: false });
  });

  it('retries once without the chain when the stored response is gone, with the full history', async () => {
    harness = await createHarness(chainScript());
    const palaver = await harness.start(responses, { tools: [lookup] });
    await palaver.chat({ userId: 'vic', text: 'first question' });
    harness.model.forgetResponse((await state(palaver, 'vic')).responseChainId!);

    const reply = await palaver.chat({ userId: 'vic', text: 'second question' });
    expect(reply.text).toBe('answer after found second question');
    const retry = harness.model.calls[2]!;
    expect(retry.previousResponseId).toBeUndefined();
    expect(retry.messages.filter((item) => item.type === 'message').map((item) => (item.type === 'message' ? item.content : ''))).toEqual([
      'first question',
      'answer after found first question',
      'second question',
    ]);
    const meta = (await lastReply(palaver, reply.sessionId)).meta;
    expect(meta).toMatchObject({ paths: ['chain_retry', 'chain'], failures: [{ path: 'chain', failure: 'stale_chain' }] });
    expect((await state(palaver, 'vic')).responseChainId).toMatch(/^resp_/);
  });

  it('answers with the fallback model without tools and without storing when the retry fails too, and clears the chain', async () => {
    harness = await createHarness(chainScript());
    const palaver = await harness.start(responses, { tools: [lookup] });
    await palaver.chat({ userId: 'wes', text: 'first question' });
    harness.model.setScript(chainScript({ model: 'scripted' }));

    const reply = await palaver.chat({ userId: 'wes', text: 'second question' });
    expect(reply.text).toBe('plain answer from backup');
    const fallbackCall = harness.model.calls.at(-1)!;
    expect(fallbackCall).toMatchObject({ model: 'backup', toolNames: [] });
    expect(fallbackCall.previousResponseId).toBeUndefined();
    expect(fallbackCall.body.store).toBe(false);
    const answer = await lastReply(palaver, reply.sessionId);
    expect(answer).toMatchObject({ model: 'backup', meta: expect.objectContaining({ fallback: true, paths: ['fallback'] }) });
    expect(answer.meta!.failures).toEqual([
      { path: 'chain', failure: 'unreachable' },
      { path: 'chain_retry', failure: 'unreachable' },
    ]);
    expect((await state(palaver, 'wes')).responseChainId).toBeNull();
  });

  it('answers with the fallback model without storing when no tools are available', async () => {
    harness = await createHarness(chainScript());
    const palaver = await harness.start(responses);
    const reply = await palaver.chat({ userId: 'xan', text: 'hello' });
    expect(reply.text).toBe('plain answer from backup');
    expect(harness.model.calls[0]!.body.store).toBe(false);
    expect((await lastReply(palaver, reply.sessionId)).meta).toMatchObject({ paths: ['no_tools'], fallback: true });
    expect((await state(palaver, 'xan')).responseChainId).toBeNull();
  });

  it('resets the chain when a tool changes the role', async () => {
    const setRole = defineTool({ name: 'set_role', description: 'Sets the role', input: z.object({ role: z.string() }), run: ({ role }) => `role ${role}` });
    harness = await createHarness(
      (call) => {
        const last = call.messages[call.messages.length - 1];
        if (last?.type === 'tool_result') return { text: 'role set' };
        if (call.toolNames.includes('lookup')) return { text: `as agent, chained: ${call.previousResponseId ? 'yes' : 'no'}` };
        return { toolCalls: [{ name: 'set_role', arguments: { role: 'agent' } }] };
      },
      { agent: 'You are an agent.' },
    );
    const palaver = await harness.start(
      { ...responses, roles: { definitions: { agent: { tools: ['lookup', 'set_role'] } }, withoutRole: ['set_role'] } },
      { tools: [lookup, setRole] },
    );
    const first = await palaver.chat({ userId: 'yara', text: 'make me an agent' });
    // After set_role the turn re-runs under the new role, starting a fresh chain.
    expect(first.text).toBe('as agent, chained: no');
    expect(harness.model.calls[1]!.instructions).toContain('You are an agent.');
  });

  it('hands hosted MCP servers to the model and records the calls it made there', async () => {
    harness = await createHarness((call) =>
      call.hostedMcpLabels.includes('docs')
        ? { text: 'The docs say yes.', hostedMcpCalls: [{ serverLabel: 'docs', name: 'search', arguments: { q: 'refunds' }, output: 'refunds: allowed' }] }
        : { text: 'no hosted tools' },
    );
    const palaver = await harness.start({
      ...responses,
      mcp: { servers: [{ label: 'docs', url: 'http://127.0.0.1:9/mcp', mode: 'hosted', bearerToken: 'docs-token', allowedTools: ['search'] }] },
    });
    const reply = await palaver.chat({ userId: 'zed', text: 'are refunds allowed?' });
    expect(reply.text).toBe('The docs say yes.');
    const sent = (harness.model.calls[0]!.body.tools as Record<string, unknown>[]).find((tool) => tool.type === 'mcp');
    expect(sent).toMatchObject({
      server_label: 'docs',
      server_url: 'http://127.0.0.1:9/mcp',
      allowed_tools: ['search'],
      require_approval: 'never',
      headers: { Authorization: 'Bearer docs-token' },
    });
    const audit = await palaver.store.messages.listRecent(reply.sessionId, { limit: 5, audience: 'audit' });
    expect(audit).toMatchObject([{ role: 'tool', content: 'refunds: allowed', meta: { hosted: true, serverLabel: 'docs' } }]);
    expect((await state(palaver, 'zed')) as unknown).toMatchObject({ recentToolCalls: [{ name: 'docs.search', ok: true }] });
  });
});
