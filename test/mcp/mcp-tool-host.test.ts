import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/domain/errors.js';
import type { ToolCallContext } from '../../src/domain/ports/tool-host.js';
import { createLogger } from '../../src/observability/logger.js';
import { McpToolHost, type McpToolHostOptions } from '../../src/tools/mcp/index.js';
import { startLogisticsMcpServer, type LogisticsMcpServer } from '../../examples/logistics/mcp-server.js';

// Runs against the real example server over HTTP on a free loopback port.

const TOKEN = 'test-logistics-token-5f2c';

const servers: LogisticsMcpServer[] = [];
const hosts: McpToolHost[] = [];

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((host) => host.close()));
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function startServer(options: { port?: number; toolDelayMs?: number } = {}): Promise<LogisticsMcpServer> {
  const server = await startLogisticsMcpServer({ token: TOKEN, ...options });
  servers.push(server);
  return server;
}

function createHost(server: { url: string }, options: Partial<McpToolHostOptions> = {}): McpToolHost {
  const host = new McpToolHost({ name: 'logistics', url: server.url, bearerToken: TOKEN, ...options });
  hosts.push(host);
  return host;
}

function portOf(server: LogisticsMcpServer): number {
  return Number(new URL(server.url).port);
}

function context(overrides: Partial<ToolCallContext> = {}): ToolCallContext {
  return {
    userId: 'alice',
    accounts: [{ channel: 'test', accountId: 'alice' }],
    sessionId: 'session-1',
    conversationId: 'conversation-1',
    correlationId: 'corr-1',
    callId: 'call-1',
    idempotencyKey: 'turn-1:call-1',
    signal: new AbortController().signal,
    role: null,
    setRole: () => undefined,
    getFlowState: () => undefined,
    setFlowState: () => undefined,
    handoff: () => undefined,
    ...overrides,
  };
}

function captureLogs(): { logger: ReturnType<typeof createLogger>; text: () => string } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  return { logger: createLogger({ level: 'debug', destination }), text: () => lines.join('') };
}

describe('McpToolHost against the logistics example server', () => {
  it('lists the server tools with their input schemas, named mcp:<label>', async () => {
    const server = await startServer();
    const host = createHost(server);

    const tools = await host.list();

    expect(host.name).toBe('mcp:logistics');
    expect(tools.map((tool) => tool.name).sort()).toEqual(['cargo_add', 'fail_tool', 'find_cargoes', 'get_user_cargoes', 'set_role', 'slow_tool'].sort());
    const cargoAdd = tools.find((tool) => tool.name === 'cargo_add');
    expect(cargoAdd?.source).toBe('mcp:logistics');
    expect(cargoAdd?.description).toMatch(/cargo/i);
    expect(cargoAdd?.parameters).toMatchObject({
      type: 'object',
      properties: { user_id: { type: 'string' }, from: { type: 'string' }, weight_kg: { type: 'number' } },
    });
  });

  it('gives a tool the progress label configured for it, and none to the others', async () => {
    const server = await startServer();
    const host = createHost(server, { toolLabels: { cargo_add: { en: 'Adding your cargo…', uk: 'Додаю вантаж…' } } });

    const tools = await host.list();

    expect(tools.find((tool) => tool.name === 'cargo_add')?.label).toEqual({ en: 'Adding your cargo…', uk: 'Додаю вантаж…' });
    expect(tools.find((tool) => tool.name === 'set_role')?.label).toBeUndefined();
  });

  it('hides the user id argument from the schema the model sees when the host binds it', async () => {
    const server = await startServer();
    const host = createHost(server, { userIdArgument: 'user_id' });

    const cargoAdd = (await host.list()).find((tool) => tool.name === 'cargo_add');

    const parameters = cargoAdd?.parameters as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(parameters.properties).sort()).toEqual(['from', 'to', 'weight_kg']);
    expect(parameters.required).not.toContain('user_id');
  });

  it('rejects list() with an authentication ToolError that never shows the token, and calls resolve isError', async () => {
    const server = await startServer();
    const wrongToken = 'wrong-token-91ab';
    const logs = captureLogs();
    const host = createHost(server, { bearerToken: wrongToken, logger: logs.logger });

    const error = await host.list().then(
      () => undefined,
      (rejection: unknown) => rejection,
    );
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe('mcp_auth_failed');
    expect((error as ToolError).message).toMatch(/authentication failed/);
    expect((error as ToolError).message).not.toContain(wrongToken);

    const result = await host.call('set_role', { role: 'client' }, context());
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/refused our credentials/);
    expect(result.content).not.toContain(wrongToken);
    expect(logs.text()).not.toContain(wrongToken);
    expect(server.calls).toHaveLength(0);
  });

  it('calls a tool and returns its text and structured content', async () => {
    const server = await startServer();
    const host = createHost(server);

    const result = await host.call('set_role', { user_id: 'alice', role: 'transporter' }, context());

    expect(result).toEqual({ content: 'Role set to transporter', structured: { role: 'transporter' }, isError: false });
  });

  it('returns a failing tool as an isError result', async () => {
    const server = await startServer();
    const host = createHost(server);

    const result = await host.call('fail_tool', {}, context());

    expect(result.isError).toBe(true);
    expect(result.content).toContain('simulated failure');
  });

  it('resolves a JSON-RPC error for the call (invalid arguments) as an isError result', async () => {
    const server = await startServer();
    const host = createHost(server);

    const result = await host.call('cargo_add', { user_id: 'alice', from: 'Oslo' }, context());

    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/cargo_add/);
  });

  it('resolves an unknown tool name as an isError result without calling the server', async () => {
    const server = await startServer();
    const host = createHost(server);

    const result = await host.call('teleport_cargo', {}, context());

    expect(result).toEqual({ content: 'Unknown tool teleport_cargo', isError: true });
    expect(server.methods).not.toContain('tools/call');
  });

  it('times out a slow tool as an isError result and does not retry it', async () => {
    const server = await startServer();
    const host = createHost(server, { timeoutMs: 300 });

    const started = Date.now();
    const result = await host.call('slow_tool', { ms: 5_000 }, context());

    expect(result).toEqual({ content: 'Tool slow_tool timed out after 300 ms', isError: true });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(server.calls.filter((call) => call.name === 'slow_tool')).toHaveLength(1);
  });

  it('reconnects once and succeeds when the server restarted on the same port mid-session', async () => {
    const first = await startServer();
    const host = createHost(first, { userIdArgument: 'user_id' });
    expect((await host.call('set_role', { role: 'client' }, context())).isError).toBe(false);

    await first.close();
    const second = await startServer({ port: portOf(first) });
    const result = await host.call('set_role', { role: 'transporter' }, context());

    expect(result).toMatchObject({ content: 'Role set to transporter', isError: false });
    expect(second.methods).toContain('initialize');
    expect(second.calls.map((call) => call.name)).toEqual(['set_role']);
  });

  it('says the server is unreachable when it stays down, and connects once it is back', async () => {
    const first = await startServer();
    const port = portOf(first);
    await first.close();
    const host = createHost(first);

    expect(await host.call('set_role', { role: 'client' }, context())).toEqual({
      content: 'MCP server logistics is unreachable',
      isError: true,
    });
    await expect(host.list()).rejects.toMatchObject({ name: 'ToolError', code: 'mcp_unreachable' });

    await startServer({ port });
    expect((await host.list()).length).toBeGreaterThan(0);
  });

  it('refuses a model-supplied user id for another user without calling the server, and logs a warning', async () => {
    const server = await startServer();
    const logs = captureLogs();
    const host = createHost(server, { userIdArgument: 'user_id', logger: logs.logger });

    const result = await host.call('get_user_cargoes', { user_id: 'mallory' }, context({ correlationId: 'corr-evil' }));

    expect(result).toEqual({ content: 'Refused: this tool acts only for the current user', isError: true });
    expect(server.calls).toHaveLength(0);
    const warning = logs
      .text()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: number; correlationId?: string; msg: string })
      .find((entry) => entry.level === 40);
    expect(warning).toMatchObject({ correlationId: 'corr-evil' });
  });

  it('injects the bound user id, so each user sees only their own cargoes', async () => {
    const server = await startServer();
    const host = createHost(server, { userIdArgument: 'user_id' });

    const added = await host.call('cargo_add', { from: 'Oslo', to: 'Bergen', weight_kg: 120 }, context());
    const sameUser = await host.call('get_user_cargoes', { user_id: 'alice' }, context());
    const otherUser = await host.call('get_user_cargoes', {}, context({ userId: 'bob' }));

    expect(added.structured).toMatchObject({ cargo_id: 'C-1', from: 'Oslo', to: 'Bergen', weight_kg: 120 });
    expect(server.calls.map((call) => call.args['user_id'])).toEqual(['alice', 'alice', 'bob']);
    expect(sameUser.content).toContain('C-1');
    expect(otherUser.content).toBe('No cargoes yet.');
  });

  it('caps result content at maxResultChars with a truncation marker', async () => {
    const server = await startServer();
    const host = createHost(server, { maxResultChars: 10 });

    const result = await host.call('set_role', { user_id: 'alice', role: 'transporter' }, context());

    expect(result.content).toBe('Role set t\n…[truncated 13 chars]');
    expect(result.isError).toBe(false);
  });

  it('serves the tool list from its cache and refreshes it after listCacheMs', async () => {
    const server = await startServer();
    let now = 1_000_000;
    const host = createHost(server, { listCacheMs: 60_000, now: () => now });
    const listCalls = (): number => server.methods.filter((method) => method === 'tools/list').length;

    await host.list();
    await host.list();
    expect(listCalls()).toBe(1);

    now += 60_001;
    await host.list();
    expect(listCalls()).toBe(2);
  });

  it('refreshes the tool list when the server sends tools/list_changed', async () => {
    const server = await startServer();
    const host = createHost(server);
    const listCalls = (): number => server.methods.filter((method) => method === 'tools/list').length;
    await host.list();

    // The notification travels on the GET stream the client opens after initialize; retry until it is up.
    await expect
      .poll(
        async () => {
          server.notifyToolListChanged();
          await new Promise((resolve) => setTimeout(resolve, 50));
          await host.list();
          return listCalls();
        },
        { timeout: 5_000, interval: 100 },
      )
      .toBeGreaterThan(1);
  });

  it('forwards the correlation id as _meta and as the x-correlation-id header, and the idempotency key as _meta', async () => {
    const server = await startServer();
    const host = createHost(server);

    await host.call('fail_tool', {}, context({ correlationId: 'corr-42', idempotencyKey: 'turn-9:call-3' }));

    expect(server.calls[0]).toMatchObject({ meta: { correlationId: 'corr-42', idempotencyKey: 'turn-9:call-3' }, correlationHeader: 'corr-42' });
  });

  it('can be closed twice, and rejects use after close', async () => {
    const server = await startServer();
    const host = createHost(server);
    await host.list();

    await host.close();
    await host.close();

    await expect(host.call('set_role', { role: 'client' }, context())).rejects.toMatchObject({ code: 'tool_host_closed' });
    await expect(host.list()).rejects.toBeInstanceOf(ToolError);
  });
});
