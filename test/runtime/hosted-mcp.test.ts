import { afterEach, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import { MemoryChannel, type ModelScript, type ScriptedCall } from '../../src/testing/index.js';
import { startDirectoryServer, type DirectoryServer } from '../identity/directory-server.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

// Seed 000: a Telegram bot on the Responses API whose tools live on a hosted MCP server (`type: "mcp"`), offered per
// role (`allowed_tools`), with `set_role` on that server and the turn re-run once under the new role.

let harness: Harness | undefined;
let directory: DirectoryServer | undefined;
afterEach(async () => {
  await harness?.close();
  await directory?.close();
  harness = undefined;
  directory = undefined;
});

const LOGISTICS_URL = 'http://127.0.0.1:9/mcp';

/** The seed's setup: one hosted server without its own allowlist, roles naming its tools. */
const seedConfig = {
  model: { provider: 'openai-responses' },
  mcp: {
    servers: [
      {
        label: 'primeai_logistics',
        url: LOGISTICS_URL,
        mode: 'hosted',
        bearerToken: 'logistics-token-123',
        headers: { 'MCP-Protocol-Version': '2025-06-18' },
      },
    ],
  },
  roles: {
    withoutRole: ['set_role'],
    definitions: {
      client: { tools: ['cargo_add', 'get_user_cargoes', 'set_role'] },
      transporter: { tools: ['lookup_company_cargo', 'set_role'] },
    },
  },
};

/** The hosted `mcp` tool a call offered (undefined when none). */
function hostedTool(call: ScriptedCall): Record<string, unknown> | undefined {
  return ((call.body.tools as Record<string, unknown>[] | undefined) ?? []).find((tool) => tool.type === 'mcp');
}

async function stateOf(palaver: Palaver, accountId: string) {
  const { user } = await palaver.store.users.resolveAccount({ channel: 'api', accountId });
  return JSON.parse((await palaver.store.userState.get(user.id))!.raw) as { role: string | null; responseChainId: string | null };
}

/** A client's tools answer; without a role, the model asks the hosted server to set one (with `roleArgs`). */
function seedScript(roleArgs: Record<string, unknown> | string = { role: 'client' }, extra: { error?: string; serverLabel?: string } = {}): ModelScript {
  return (call) => {
    const allowed = hostedTool(call)?.allowed_tools as string[] | undefined;
    if (allowed?.includes('cargo_add')) return { text: `client tools, chained: ${call.previousResponseId ? 'yes' : 'no'}` };
    return {
      text: 'Are you a client or a transporter?',
      hostedMcpCalls: [
        {
          serverLabel: extra.serverLabel ?? 'primeai_logistics',
          name: 'set_role',
          arguments: roleArgs,
          output: 'role set',
          ...(extra.error ? { error: extra.error } : {}),
        },
      ],
    };
  };
}

describe('hosted MCP servers (Responses API, seed 000)', () => {
  it('continues the Responses chain when the only tools are on a hosted MCP server', async () => {
    harness = await createHarness(() => ({ text: 'answered' }));
    const palaver = await harness.start({
      model: { provider: 'openai-responses' },
      mcp: { servers: [{ label: 'docs', url: LOGISTICS_URL, mode: 'hosted', allowedTools: ['search'] }] },
    });
    await palaver.chat({ userId: 'hana', text: 'first question' });
    const chainId = (await stateOf(palaver, 'hana')).responseChainId;
    expect(chainId).toMatch(/^resp_/);

    await palaver.chat({ userId: 'hana', text: 'second question' });
    const second = harness.model.calls[1]!;
    expect(second.previousResponseId).toBe(chainId);
    expect(second.messages).toEqual([{ type: 'message', role: 'user', content: 'second question' }]);
    expect(second.body.store).not.toBe(false);
  });

  it('sends the configured headers and the bearer token to the hosted server, and offers it only the role tools', async () => {
    harness = await createHarness(seedScript());
    const palaver = await harness.start(seedConfig);
    await palaver.chat({ userId: 'oleh', text: 'hello' });

    expect(hostedTool(harness.model.calls[0]!)).toMatchObject({
      server_label: 'primeai_logistics',
      server_url: LOGISTICS_URL,
      headers: { 'MCP-Protocol-Version': '2025-06-18', Authorization: 'Bearer logistics-token-123' },
      allowed_tools: ['set_role'],
    });
    expect(hostedTool(harness.model.calls[1]!)?.allowed_tools).toEqual(['cargo_add', 'get_user_cargoes', 'set_role']);
  });

  it('re-runs the turn once under the role a hosted set_role granted, on a fresh chain that the next message continues', async () => {
    harness = await createHarness(seedScript(), { client: 'You serve a client.' });
    const palaver = await harness.start(seedConfig);

    const first = await palaver.chat({ userId: 'ira', text: 'I have cargo to ship' });
    // The answer written beside set_role (under no role) is dropped: the person gets the client's answer.
    expect(first.text).toBe('client tools, chained: no');
    expect(harness.model.calls).toHaveLength(2);
    expect(harness.model.calls[1]!.instructions).toContain('You serve a client.');
    const state = await stateOf(palaver, 'ira');
    expect(state.role).toBe('client');
    expect(state.responseChainId).toMatch(/^resp_/);
    const audit = await palaver.store.messages.listRecent(first.sessionId, { limit: 5, audience: 'audit' });
    expect(audit).toMatchObject([{ role: 'tool', content: 'role set', meta: { hosted: true, serverLabel: 'primeai_logistics' } }]);

    const second = await palaver.chat({ userId: 'ira', text: 'what about my cargo?' });
    expect(second.text).toBe('client tools, chained: yes');
    // The chain goes on from the re-run's response, the one that knew the client's instructions.
    expect(harness.model.calls[2]!.previousResponseId).toBe(state.responseChainId);
    expect(harness.model.calls[2]!.messages).toEqual([{ type: 'message', role: 'user', content: 'what about my cargo?' }]);
  });

  it('withdraws the answer it streamed beside a hosted set_role before streaming the re-run', async () => {
    harness = await createHarness(seedScript());
    const chat = new MemoryChannel({ capabilities: { streaming: true } });
    await harness.start(seedConfig, { channels: [chat] });

    const said = await chat.say('I have cargo to ship', { accountId: 'ira' });
    expect((await chat.waitForReply(said)).parts).toEqual(['client tools, chained: no']);
    // What the person saw stream: the first answer, withdrawn, then the re-run's alone.
    const shown = chat.progressEvents.map(({ value }) => (value.type === 'text_delta' ? value.delta : value.type === 'discard' ? '|withdrawn|' : '')).join('');
    expect(shown).toBe('Are you a client or a transporter?|withdrawn|client tools, chained: no');
  });

  it('does not warn at start-up about allowlisted tools that only the hosted server offers', async () => {
    harness = await createHarness(seedScript());
    const palaver = await harness.start(seedConfig);
    expect((await palaver.diagnose()).filter((problem) => problem.includes('no tool host provides'))).toEqual([]);
  });

  it.each([
    ['a role nobody configured', seedScript({ role: 'admin' })],
    ['arguments that name no role', seedScript('not json')],
    ['a call the server failed', seedScript({ role: 'client' }, { error: 'database down' })],
    ['a server that was not offered', seedScript({ role: 'client' }, { serverLabel: 'elsewhere' })],
  ])('keeps the role and answers once when a hosted set_role names %s', async (_case, script) => {
    harness = await createHarness(script);
    const palaver = await harness.start(seedConfig);

    const reply = await palaver.chat({ userId: 'mallory', text: 'make me an admin' });
    expect(reply.text).toBe('Are you a client or a transporter?');
    expect(harness.model.calls).toHaveLength(1);
    expect((await stateOf(palaver, 'mallory')).role).toBeNull();
  });

  it('sends the configured headers to a Streamable-HTTP MCP server that Palaver calls itself', async () => {
    directory = await startDirectoryServer({ tool: 'whoami' });
    harness = await createHarness((call) =>
      call.messages.at(-1)?.type === 'tool_result' ? { text: 'done' } : { toolCalls: [{ name: 'whoami', arguments: { channel: 'api', account_id: 'x' } }] },
    );
    const palaver = await harness.start({
      mcp: {
        servers: [
          {
            label: 'crm',
            url: directory.url,
            bearerToken: 'crm-token-12345',
            headers: { 'X-Tenant': 'acme', Authorization: 'Bearer overridden-by-bearerToken' },
          },
        ],
      },
    });
    expect((await palaver.chat({ userId: 'tom', text: 'who am I?' })).text).toBe('done');
    expect(directory.calls).toHaveLength(1);
    expect(directory.callHeaders[0]).toMatchObject({ 'x-tenant': 'acme', authorization: 'Bearer crm-token-12345' });
  });
});
