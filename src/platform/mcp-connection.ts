import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';

/** One MCP session over Streamable HTTP: the SDK client and its transport. */
export interface McpConnection {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
}

export interface OpenMcpConnectionOptions {
  readonly url: URL;
  /** Sent with every request (auth); the SDK adds `mcp-session-id` and `mcp-protocol-version` itself. */
  readonly headers: Readonly<Record<string, string>>;
  readonly fetch?: FetchLike | undefined;
  readonly timeoutMs: number;
  readonly clientInfo: { readonly name: string; readonly version: string };
  /** Called with the client before it connects: handlers that must see the session from its start. */
  readonly configure?: (client: Client) => void;
}

/** `close` asks the server to end the session, but does not wait on a server that is gone. */
const TERMINATE_SESSION_MS = 1_000;

/** Opens a session (initialize within `timeoutMs`); a failed open leaves nothing behind. */
export async function openMcpConnection(options: OpenMcpConnectionOptions): Promise<McpConnection> {
  const transport = new StreamableHTTPClientTransport(options.url, {
    requestInit: { headers: { ...options.headers } },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const client = new Client({ ...options.clientInfo });
  options.configure?.(client);
  try {
    await client.connect(transport, { timeout: options.timeoutMs });
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
  return { client, transport };
}

/**
 * Ends a session: tells the server (so it frees the session now rather than at its idle timeout, bounded since the
 * server may be gone), then closes the client. Never throws.
 */
export async function closeMcpConnection(connection: McpConnection): Promise<void> {
  await withDeadline(
    connection.transport.terminateSession().catch(() => undefined),
    TERMINATE_SESSION_MS,
  );
  await connection.client.close().catch(() => undefined);
}

async function withDeadline(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  await Promise.race([work, deadline]);
  clearTimeout(timer);
}
