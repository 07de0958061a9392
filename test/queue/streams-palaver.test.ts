import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startLogisticsMcpServer } from '../../examples/logistics/mcp-server.js';
import type { RedisSettings } from '../../src/platform/redis-connection.js';
import { ToolRegistry } from '../../src/runtime/tools/tool-registry.js';
import type { ModelScript } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { LocalToolHost } from '../../src/tools/local-tool-host.js';
import { McpToolHost } from '../../src/tools/mcp/mcp-tool-host.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { connectTestRedis, dropTestKeys, testRedisSettings } from '../support/redis.js';
import { startStandInWorker, type StandInWorker } from '../support/stand-in-tool-worker.js';

const TOKEN = 'test-logistics-token';
let harness: Harness | undefined;
let mcp: Awaited<ReturnType<typeof startLogisticsMcpServer>> | undefined;
let worker: StandInWorker | undefined;
let redis: RedisSettings | undefined;
afterEach(async () => {
  await harness?.close();
  await worker?.close();
  await mcp?.close();
  if (redis) await dropTestKeys(redis);
  harness = mcp = worker = redis = undefined;
});

const roles = {
  definitions: {
    client: { tools: ['set_role', 'cargo_add', 'get_user_cargoes', 'shout'] },
    transporter: { tools: ['set_role', 'find_cargoes'] },
  },
  withoutRole: ['set_role'],
};

/** A model that picks its role first, then acts with the tools that role offers. */
const logisticsModel: ModelScript = (call) => {
  const last = call.messages[call.messages.length - 1];
  if (last?.type === 'tool_result') return { text: `Done: ${last.output}` };
  const text = lastUserText(call) ?? '';
  if (/sneak/.test(text)) return { toolCalls: [{ name: 'cargo_add', arguments: { from: 'Kyiv', to: 'Lviv', weight_kg: 1 } }] };
  if (call.toolNames.includes('shout') && /shout/.test(text)) return { toolCalls: [{ name: 'shout', arguments: { text: 'hello' } }] };
  if (call.toolNames.includes('cargo_add') && /cargo/.test(text))
    return { toolCalls: [{ name: 'cargo_add', arguments: { from: 'Kyiv', to: 'Lviv', weight_kg: 120 } }] };
  if (call.toolNames.includes('escalate') && /escalate/.test(text)) return { toolCalls: [{ name: 'escalate', arguments: { about: 'a lost cargo' } }] };
  if (call.toolNames.includes('handoff') && /human/.test(text)) return { toolCalls: [{ name: 'handoff', arguments: { reason: 'asks for a human' } }] };
  if (/client/.test(text) && call.toolNames.includes('set_role')) return { toolCalls: [{ name: 'set_role', arguments: { role: 'client' } }] };
  return { text: `tools: ${call.toolNames.join(',')}` };
};

/** A worker serving the logistics MCP server and one local tool; the runtime itself has no tool host. */
async function start(extraConfig: Record<string, unknown> | ((mcpUrl: string) => Record<string, unknown>) = {}) {
  mcp = await startLogisticsMcpServer({ port: 0, token: TOKEN });
  redis = testRedisSettings();
  const shout = defineTool({ name: 'shout', description: 'Says it loudly', input: z.object({ text: z.string() }), run: ({ text }) => text.toUpperCase() });
  const escalate = defineTool({
    name: 'escalate',
    description: 'Hands a complaint to a person',
    input: z.object({ about: z.string() }),
    run: ({ about }, ctx) => {
      ctx.handoff({ reason: `complaint about ${about}` });
      return 'A person takes it from here.';
    },
  });
  const registry = new ToolRegistry([
    new LocalToolHost([shout, escalate]),
    new McpToolHost({ name: 'logistics', url: mcp.url, bearerToken: TOKEN, userIdArgument: 'user_id', timeoutMs: 5_000 }),
  ]);
  worker = await startStandInWorker({ redis, registry });
  harness = await createHarness(logisticsModel, { client: 'You help clients ship cargo.' });
  const extra = typeof extraConfig === 'function' ? extraConfig(mcp.url) : extraConfig;
  return harness.start({ roles, tools: { dispatch: 'streams', callTimeoutMs: 10_000 }, redis, ...extra });
}

describe('a Palaver with tools.dispatch "streams"', () => {
  it('asks first for a worker-served tool its own config names in mcp.servers[].approval, then runs it once on the worker', async () => {
    const palaver = await start((url) => ({
      mcp: { servers: [{ label: 'logistics', url, bearerToken: TOKEN, userIdArgument: 'user_id', approval: { tools: ['cargo_add'], by: 'person' } }] },
    }));
    const question = await palaver.chat({ userId: 'oles', text: 'I am a client, add my cargo please' });
    expect(question.text).toContain('cargo_add: from "Kyiv", to "Lviv", weight_kg 120');
    expect(await palaver.store.approvals.pendingFor(question.sessionId)).toMatchObject({ tool: 'cargo_add', status: 'pending' });
    const added = () => mcp!.calls.filter((call) => call.name === 'cargo_add');
    expect(added()).toEqual([]);
    const answer = await palaver.chat({ userId: 'oles', text: 'yes' });
    expect(answer.text).toMatch(/^Done: Cargo C-\d+ added: Kyiv → Lviv/);
    const session = await palaver.store.sessions.findById(question.sessionId);
    expect(added().map((call) => call.args['user_id'])).toEqual([session!.userId]);
  });

  it('offers what the worker serves through the role allowlist, and runs MCP and local tools on the worker for the bound user', async () => {
    const palaver = await start();
    const reply = await palaver.chat({ userId: 'olga', text: 'I am a client, add my cargo please' });
    const [first, second] = harness!.model.calls;
    expect(first!.toolNames).toEqual(['set_role']);
    expect([...second!.toolNames].sort()).toEqual(['cargo_add', 'get_user_cargoes', 'set_role', 'shout']);
    expect(reply.text).toMatch(/^Done: Cargo C-\d+ added: Kyiv → Lviv/);

    const { user } = await palaver.store.users.resolveAccount({ channel: 'api', accountId: 'olga' });
    expect(mcp!.calls.map((call) => [call.name, call.args.user_id])).toEqual([
      ['set_role', user.id],
      ['cargo_add', user.id],
    ]);
    expect(worker!.ran.map((call) => [call.toolName, call.userId, call.correlationId])).toEqual([
      ['set_role', user.id, reply.correlationId],
      ['cargo_add', user.id, reply.correlationId],
    ]);
    // The role the worker's set_role call set reached the runtime as an effect, and the next turn's call carries it.
    const loud = await palaver.chat({ userId: 'olga', text: 'shout it' });
    expect(loud.text).toBe('Done: HELLO');
    expect(worker!.ran.at(-1)).toMatchObject({ toolName: 'shout', role: 'client' });

    expect(await palaver.health()).toMatchObject({ database: { ok: true }, redis: { ok: true } });
    const metrics = await palaver.metrics.registry.metrics();
    expect(metrics).toMatch(/palaver_tool_dispatch_calls_total\{outcome="ok"\} 3/);
    // The runtime's lines about a streamed call carry the turn's correlation id.
    expect(harness!.logs.some((line) => line.msg === 'tool call answered by a worker' && line.correlationId === loud.correlationId)).toBe(true);
  });

  it("shows the tool stream's backlog and dead letters in the operators' overview", async () => {
    const adminToken = 'overview-admin-token-1234';
    const palaver = await start({ server: { adminToken } });
    await palaver.chat({ userId: 'olga', text: 'I am a client' });
    const server = await palaver.serve({ port: 0 });
    const overview = async () => {
      const response = await fetch(`${server.url}/admin/overview`, { headers: { authorization: `Bearer ${adminToken}` } });
      expect(response.status).toBe(200);
      return ((await response.json()) as { toolStream: unknown }).toolStream;
    };
    try {
      // The worker took and acknowledged the call: nothing waits, nothing was given up.
      expect(await overview()).toEqual({ backlog: 0, deadLetters: 0 });
      // A call given up after its attempts lands in <stream>.dead, as the worker writes it.
      const redisClient = await connectTestRedis(redis!);
      await redisClient.client.xAdd(redisClient.key('events.plugins.dead'), '*', { callKey: 'k', error: 'gave up' });
      await redisClient.close();
      expect(await overview()).toEqual({ backlog: 0, deadLetters: 1 });
    } finally {
      await server.close();
    }
  });

  it("hands over from a worker's tool (ctx.handoff), and runs the built-in handoff tool in the runtime: no worker sees it", async () => {
    const notice = 'I have passed our conversation to a person from our team. They will answer you here.';
    const palaver = await start({ agent: { tools: ['handoff'] }, roles: { definitions: {}, withoutRole: [] } });
    const escalated = await palaver.chat({ userId: 'olga', text: 'escalate my complaint' });
    expect(escalated.text).toBe(notice);
    expect(worker!.ran.map((call) => call.toolName)).toEqual(['escalate']);
    expect(await palaver.store.handoffs.findOpen(escalated.sessionId)).toMatchObject({ reason: 'complaint about a lost cargo', source: 'tool' });

    const human = await palaver.chat({ userId: 'ivan', text: 'a human, please' });
    expect(human.text).toBe(notice);
    expect(await palaver.store.handoffs.findOpen(human.sessionId)).toMatchObject({ reason: 'asks for a human', source: 'model' });
    expect(worker!.delivered.map((call) => call.toolName)).toEqual(['escalate']);
    expect(harness!.model.calls).toHaveLength(2);
  });

  it('refuses a tool outside the role before it leaves the runtime: no worker sees it', async () => {
    const palaver = await start();
    const reply = await palaver.chat({ userId: 'ivan', text: 'sneak a cargo in' });
    expect(reply.text).toContain('Tool cargo_add is not available');
    expect(worker!.delivered).toEqual([]);
    expect(mcp!.calls).toEqual([]);
  });
});
