import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export interface VerifyUserArgs {
  readonly channel: string;
  readonly account_id: string;
  readonly phone?: string;
}

/** A team's directory: a real MCP server over Streamable HTTP on loopback with one `verify_user`-style tool. */
export interface DirectoryServer {
  readonly url: string;
  readonly port: number;
  /** Every call of the tool, in order, with the headers it came with. */
  readonly calls: Array<{ readonly args: VerifyUserArgs; readonly authorization: string | undefined }>;
  /** The request headers of each call, in the order of `calls`. */
  readonly callHeaders: IncomingMessage['headers'][];
  /** What the tool answers; replace it to change the directory's mind. */
  answer: (args: VerifyUserArgs) => CallToolResult;
  /** Forgets every session, as a restarted server does: the next request on an old session gets HTTP 404. */
  dropSessions(): Promise<void>;
  close(): Promise<void>;
}

export async function startDirectoryServer(
  options: { port?: number; tool?: string; answer?: (args: VerifyUserArgs) => CallToolResult } = {},
): Promise<DirectoryServer> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServer }>();
  const toolName = options.tool ?? 'verify_user';
  let currentHeaders: IncomingMessage['headers'] = {};

  const directory: DirectoryServer = {
    url: '',
    port: 0,
    calls: [],
    callHeaders: [],
    answer: options.answer ?? ((args) => ({ content: [], structuredContent: { user_id: `user-${args.account_id}` } })),
    async dropSessions() {
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.all(open.map(({ server }) => server.close().catch(() => undefined)));
    },
    close: async () => undefined,
  };

  const newSession = async (): Promise<StreamableHTTPServerTransport> => {
    const server = new McpServer({ name: 'directory', version: '0.1.0' });
    server.registerTool(
      toolName,
      {
        description: 'Names the user behind a channel account.',
        inputSchema: { channel: z.string(), account_id: z.string(), phone: z.string().optional() },
      },
      (args: VerifyUserArgs) => {
        const authorization = currentHeaders.authorization;
        directory.calls.push({ args, authorization: typeof authorization === 'string' ? authorization : undefined });
        directory.callHeaders.push(currentHeaders);
        return directory.answer(args);
      },
    );
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, { transport, server });
      },
    });
    await server.connect(transport);
    return transport;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    currentHeaders = req.headers;
    let body: unknown;
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    }
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      if (!session) return sendJson(res, 404, { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });
      return session.transport.handleRequest(req, res, body);
    }
    if (req.method === 'POST' && isInitializeRequest(body)) return (await newSession()).handleRequest(req, res, body);
    return sendJson(res, 400, { jsonrpc: '2.0', error: { code: -32000, message: 'initialize first' }, id: null });
  };

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { error: 'internal' });
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return Object.assign(directory, {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    close: () => {
      closing ??= (async () => {
        await directory.dropSessions();
        const closed = new Promise<void>((resolve) => http.close(() => resolve()));
        // Keep-alive sockets would hold the port; a restart on the same port needs it now.
        http.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
