import { afterEach, describe, expect, it } from 'vitest';
import { startLogisticsMcpServer } from '../../examples/logistics/mcp-server.js';
import type { ModelScript } from '../../src/testing/index.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';

const TOKEN = 'test-logistics-token';
let harness: Harness | undefined;
let mcp: Awaited<ReturnType<typeof startLogisticsMcpServer>> | undefined;
afterEach(async () => {
  await harness?.close();
  await mcp?.close();
  harness = undefined;
  mcp = undefined;
});

const roles = {
  definitions: {
    client: { tools: ['set_role', 'cargo_add', 'get_user_cargoes'] },
    transporter: { tools: ['set_role', 'find_cargoes'] },
  },
  withoutRole: ['set_role'],
};

function logisticsConfig(url: string, extra: Record<string, unknown> = {}) {
  return { roles, mcp: { servers: [{ label: 'logistics', url, bearerToken: TOKEN, userIdArgument: 'user_id', timeoutMs: 5_000 }] }, ...extra };
}

/** A model that picks its role first, then acts with the tools that role offers. */
const logisticsModel: ModelScript = (call) => {
  const last = call.messages[call.messages.length - 1];
  if (last?.type === 'tool_result') return { text: `Done: ${last.output}` };
  const text = lastUserText(call) ?? '';
  if (call.toolNames.includes('cargo_add') && /cargo/.test(text))
    return { toolCalls: [{ name: 'cargo_add', arguments: { from: 'Kyiv', to: 'Lviv', weight_kg: 120 } }] };
  if (/client/.test(text) && call.toolNames.includes('set_role')) return { toolCalls: [{ name: 'set_role', arguments: { role: 'client' } }] };
  return { text: `tools: ${call.toolNames.join(',')}` };
};

describe('roles and MCP tools', () => {
  it('offers only the no-role tools, then re-runs the turn with the new role after set_role', async () => {
    mcp = await startLogisticsMcpServer({ port: 0, token: TOKEN });
    harness = await createHarness(logisticsModel, { client: 'You help clients ship cargo.', transporter: 'You help transporters find cargo.' });
    const palaver = await harness.start(logisticsConfig(mcp.url));

    const reply = await palaver.chat({ userId: 'olga', text: 'I am a client, add my cargo please' });
    const [first, second, third] = harness.model.calls;
    expect(first!.toolNames).toEqual(['set_role']);
    expect(first!.instructions).not.toContain('You help clients');
    // The re-run: client instructions and client tools, and the model goes on to add the cargo.
    expect(second!.instructions).toContain('You help clients ship cargo.');
    expect([...second!.toolNames].sort()).toEqual(['cargo_add', 'get_user_cargoes', 'set_role']);
    expect(third!.messages.at(-1)).toMatchObject({ type: 'tool_result' });
    expect(reply.text).toMatch(/^Done: Cargo C-\d+ added: Kyiv → Lviv/);
    expect(harness.model.calls).toHaveLength(3);

    const { user } = await palaver.store.users.resolveAccount({ channel: 'api', accountId: 'olga' });
    const state = JSON.parse((await palaver.store.userState.get(user.id))!.raw);
    expect(state.role).toBe('client');
    expect(state.recentToolCalls.map((call: { name: string }) => call.name)).toEqual(['set_role', 'cargo_add']);
    // The MCP server acted for the server-bound user, with the correlation id of the turn.
    expect(mcp.calls.map((call) => [call.name, call.args.user_id])).toEqual([
      ['set_role', user.id],
      ['cargo_add', user.id],
    ]);
    expect(mcp.calls[0]!.meta).toMatchObject({ correlationId: reply.correlationId });
  });

  it('keeps the role for the next turn and shows it to the model as internal service data', async () => {
    mcp = await startLogisticsMcpServer({ port: 0, token: TOKEN });
    harness = await createHarness(logisticsModel, { client: 'You help clients ship cargo.' });
    const palaver = await harness.start(logisticsConfig(mcp.url));
    await palaver.chat({ userId: 'pavel', text: 'I am a client' });
    harness.model.calls.length = 0;
    const reply = await palaver.chat({ userId: 'pavel', text: 'what can you do?' });
    expect(reply.text).toBe('tools: set_role,cargo_add,get_user_cargoes');
    expect(harness.model.calls[0]!.instructions).toContain('- role: client');
    expect(harness.model.calls[0]!.instructions).toContain('earlier tool call: set_role');
  });

  it('refuses a tool call for another user id, and the MCP server never sees it', async () => {
    mcp = await startLogisticsMcpServer({ port: 0, token: TOKEN });
    harness = await createHarness((call) => {
      const last = call.messages[call.messages.length - 1];
      if (last?.type === 'tool_result') return { text: `Result: ${last.output}` };
      return { toolCalls: [{ name: 'get_user_cargoes', arguments: { user_id: 'someone-else' } }] };
    });
    const palaver = await harness.start(logisticsConfig(mcp.url, { roles: { definitions: {}, withoutRole: [] } }));
    const reply = await palaver.chat({ userId: 'quinn', text: 'show cargoes of someone-else' });
    expect(reply.text).toMatch(/Refused/);
    expect(mcp.calls).toEqual([]);
  });

  it('answers without the tools of a dead MCP server instead of failing the turn', async () => {
    harness = await createHarness((call) => ({ text: `tools: ${call.toolNames.join(',') || 'none'}` }));
    const palaver = await harness.start(logisticsConfig('http://127.0.0.1:9/mcp', { roles: { definitions: {}, withoutRole: [] } }));
    const reply = await palaver.chat({ userId: 'rita', text: 'hello' });
    expect(reply).toMatchObject({ status: 'completed', text: 'tools: none' });
    expect(harness.logs.some((line) => line.msg === 'tool host unavailable' && line.host === 'mcp:logistics')).toBe(true);
    expect(JSON.stringify(harness.logs)).not.toContain(TOKEN);
  });

  it('warns about a tool that an allowlist names but no server provides', async () => {
    mcp = await startLogisticsMcpServer({ port: 0, token: TOKEN });
    harness = await createHarness(() => ({ text: 'ok' }));
    const palaver = await harness.start(
      logisticsConfig(mcp.url, { roles: { definitions: { client: { tools: ['cargo_add', 'teleport_cargo'] } }, withoutRole: ['set_role'] } }),
    );
    expect(await palaver.tools.diagnose()).toEqual(['role client allows tool "teleport_cargo", but no tool host provides it']);
  });
});
