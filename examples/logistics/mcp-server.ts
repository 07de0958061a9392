/**
 * Example MCP server for the logistics agent: clients add cargoes, transporters find them. Streamable HTTP in
 * stateful mode (one session per client, `mcp-session-id`), bearer-token auth, in-memory data keyed by `user_id`
 * (which Palaver's McpToolHost fills with the turn's bound user; the model never chooses it).
 *
 * Run: `npx tsx examples/logistics/mcp-server.ts [port] [token]` (defaults 3100, `dev-logistics-token`).
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { LogisticsData, type Cargo } from './logistics-data.js';

export interface LogisticsMcpServerOptions {
  /** Default 0: a free port. */
  readonly port?: number;
  /** Default `127.0.0.1`. */
  readonly host?: string;
  /** Required as `Authorization: Bearer <token>`; anything else gets 401. */
  readonly token: string;
  /** Added to every tool call, to simulate a slow backend. Default 0. */
  readonly toolDelayMs?: number;
}

/** One tool call as the server saw it. */
export interface RecordedCall {
  readonly name: string;
  readonly args: Readonly<Record<string, unknown>>;
  /** The request's `_meta` (Palaver sends `{ correlationId }`). */
  readonly meta: Readonly<Record<string, unknown>> | undefined;
  /** The `x-correlation-id` HTTP header of the request. */
  readonly correlationHeader: string | undefined;
}

export interface LogisticsMcpServer {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3100/mcp`. */
  readonly url: string;
  /** Every tool call, in order. */
  readonly calls: RecordedCall[];
  /** Every authorised JSON-RPC method received (`initialize`, `tools/list`, `tools/call`, …), in order. */
  readonly methods: string[];
  /** Sends `notifications/tools/list_changed` to every open session. */
  notifyToolListChanged(): void;
  /** Closes every session and the HTTP server. Safe to call twice. */
  close(): Promise<void>;
}

interface Session {
  readonly transport: StreamableHTTPServerTransport;
  readonly server: McpServer;
}

const MAX_BODY_BYTES = 1_000_000;

/**
 * Starts the example server.
 *
 * @example
 * const server = await startLogisticsMcpServer({ token: 'secret' });
 * // … new McpToolHost({ name: 'logistics', url: server.url, bearerToken: 'secret', userIdArgument: 'user_id' })
 * await server.close();
 */
export async function startLogisticsMcpServer(options: LogisticsMcpServerOptions): Promise<LogisticsMcpServer> {
  const data = new LogisticsData();
  const sessions = new Map<string, Session>();
  const calls: RecordedCall[] = [];
  const methods: string[] = [];
  const expectedAuth = Buffer.from(`Bearer ${options.token}`);

  const isAuthorised = (req: IncomingMessage): boolean => {
    const given = Buffer.from(req.headers.authorization ?? '');
    return given.length === expectedAuth.length && timingSafeEqual(given, expectedAuth);
  };

  const newSession = async (): Promise<StreamableHTTPServerTransport> => {
    const server = createLogisticsMcpServer(data, calls, options.toolDelayMs ?? 0);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, { transport, server });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return transport;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== '/mcp') return sendJson(res, 404, { error: 'not found; the MCP endpoint is /mcp' });
    if (!isAuthorised(req)) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      return sendJson(res, 401, { error: 'unauthorized' });
    }
    let body: unknown;
    if (req.method === 'POST') {
      try {
        body = JSON.parse(await readBody(req));
      } catch {
        return sendRpcError(res, 400, -32700, 'Parse error');
      }
      for (const message of Array.isArray(body) ? body : [body]) {
        const method = (message as { method?: unknown } | null)?.method;
        if (typeof method === 'string') methods.push(method);
      }
    }
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      // The Streamable HTTP spec: an unknown session id gets 404, which tells the client to start a new session.
      if (!session) return sendRpcError(res, 404, -32001, 'Session not found');
      return session.transport.handleRequest(req, res, body);
    }
    if (req.method === 'POST' && isInitializeRequest(body)) {
      const transport = await newSession();
      return transport.handleRequest(req, res, body);
    }
    return sendRpcError(res, 400, -32000, 'Bad Request: send initialize first, or the mcp-session-id header');
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendRpcError(res, 500, -32603, 'Internal error');
      else res.end();
      console.error('logistics MCP server: request failed', error);
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      http.off('error', reject);
      resolve();
    });
  });
  const address = http.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}/mcp`,
    calls,
    methods,
    notifyToolListChanged: () => {
      for (const { server } of sessions.values()) server.sendToolListChanged();
    },
    close: () => {
      closing ??= (async () => {
        await Promise.all([...sessions.values()].map(({ server }) => server.close().catch(() => undefined)));
        sessions.clear();
        const closed = new Promise<void>((resolve) => http.close(() => resolve()));
        // Open SSE streams and keep-alive sockets would hold the port; a restart on the same port needs it now.
        http.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}

/** The parts of the SDK's request context the example reads. */
interface ToolExtra {
  readonly _meta?: Record<string, unknown>;
  readonly requestInfo?: { readonly headers: Readonly<Record<string, string | string[] | undefined>> };
  readonly signal: AbortSignal;
}

/** The MCP server for one session; the data is shared by all sessions. */
export function createLogisticsMcpServer(data: LogisticsData, calls: RecordedCall[], toolDelayMs = 0): McpServer {
  const server = new McpServer({ name: 'logistics', version: '0.1.0' });

  /** Wraps a handler to record the call and apply the configured delay. */
  const tool =
    <A extends Record<string, unknown>>(name: string, run: (args: A, signal: AbortSignal) => Promise<CallToolResult> | CallToolResult) =>
    async (args: A, extra: ToolExtra): Promise<CallToolResult> => {
      const header = extra.requestInfo?.headers['x-correlation-id'];
      calls.push({ name, args, meta: extra._meta, correlationHeader: typeof header === 'string' ? header : undefined });
      if (toolDelayMs > 0) await sleep(toolDelayMs, extra.signal);
      return run(args, extra.signal);
    };

  const userId = z.string().min(1).describe('The user the call acts for (set by the host, not the model)');

  server.registerTool(
    'set_role',
    {
      description: 'Sets whether the user ships cargo (client) or carries it (transporter).',
      inputSchema: { user_id: userId, role: z.enum(['client', 'transporter']) },
    },
    tool('set_role', ({ user_id, role }: { user_id: string; role: 'client' | 'transporter' }) => {
      data.setRole(user_id, role);
      return { content: [{ type: 'text', text: `Role set to ${role}` }], structuredContent: { role } };
    }),
  );

  server.registerTool(
    'cargo_add',
    {
      description: 'Registers a cargo to ship, from one city to another.',
      inputSchema: {
        user_id: userId,
        from: z.string().min(1).describe('City of departure'),
        to: z.string().min(1).describe('City of arrival'),
        weight_kg: z.number().positive().describe('Weight in kilograms'),
      },
    },
    tool('cargo_add', ({ user_id, from, to, weight_kg }: { user_id: string; from: string; to: string; weight_kg: number }) => {
      const cargo = data.addCargo(user_id, { from, to, weight_kg });
      return { content: [{ type: 'text', text: `Cargo ${cargo.cargo_id} added: ${describeCargo(cargo)}` }], structuredContent: publicCargo(cargo) };
    }),
  );

  server.registerTool(
    'get_user_cargoes',
    { description: "Lists the user's own cargoes.", inputSchema: { user_id: userId } },
    tool('get_user_cargoes', ({ user_id }: { user_id: string }) => {
      const cargoes = data.cargoesOf(user_id);
      const text = cargoes.length === 0 ? 'No cargoes yet.' : cargoes.map((c) => `${c.cargo_id}: ${describeCargo(c)}`).join('\n');
      return { content: [{ type: 'text', text }], structuredContent: { cargoes: cargoes.map(publicCargo) } };
    }),
  );

  server.registerTool(
    'find_cargoes',
    {
      description: 'Finds open cargoes by route, for transporters. Both filters are optional.',
      inputSchema: { user_id: userId, from: z.string().optional(), to: z.string().optional() },
    },
    tool('find_cargoes', ({ user_id, from, to }: { user_id: string; from?: string; to?: string }) => {
      if (data.roleOf(user_id) !== 'transporter') {
        return { content: [{ type: 'text', text: 'Only transporters can search cargoes; set the role to transporter first.' }], isError: true };
      }
      const found = data.find({ from, to });
      const text = found.length === 0 ? 'No matching cargoes.' : found.map((c) => `${c.cargo_id}: ${describeCargo(c)}`).join('\n');
      return { content: [{ type: 'text', text }], structuredContent: { cargoes: found.map(publicCargo) } };
    }),
  );

  server.registerTool(
    'slow_tool',
    { description: 'Waits the given number of milliseconds (for timeout tests).', inputSchema: { ms: z.number().int().min(0).max(60_000) } },
    tool('slow_tool', async ({ ms }: { ms: number }, signal) => {
      await sleep(ms, signal);
      return { content: [{ type: 'text', text: `Slept ${ms} ms` }] };
    }),
  );

  server.registerTool(
    'fail_tool',
    { description: 'Always fails (for error-path tests).', inputSchema: {} },
    tool('fail_tool', () => ({ content: [{ type: 'text', text: 'Cargo service is down (simulated failure)' }], isError: true })),
  );

  return server;
}

function publicCargo({ owner_id: _owner, ...cargo }: Cargo): Omit<Cargo, 'owner_id'> {
  return cargo;
}

function describeCargo(cargo: Cargo): string {
  return `${cargo.from} → ${cargo.to}, ${cargo.weight_kg} kg`;
}

/** Resolves after `ms`, or early when the request is cancelled (the client gave up). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error('request body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function sendRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null });
}

// Standalone: `npx tsx examples/logistics/mcp-server.ts [port] [token]`.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const port = Number(process.argv[2] ?? 3100);
  const token = process.argv[3] ?? 'dev-logistics-token';
  const server = await startLogisticsMcpServer({ port, token });
  console.log(`Logistics MCP server listening on ${server.url}`);
  const stop = (): void => {
    void server.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
