import type { ApprovalDecider } from '../../domain/approval.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { ConfigError, ToolError } from '../../domain/errors.js';
import type { JsonSchema } from '../../domain/ports/model-provider.js';
import type { ToolCallContext, ToolDescriptor, ToolHost, ToolLabel, ToolResult } from '../../domain/ports/tool-host.js';
import { DEFAULT_MAX_TOOL_RESULT_CHARS } from '../../domain/tool-result-cap.js';
import { silentLogger, type Logger } from '../../observability/logger.js';
import { classifyMcpError } from './classify-mcp-error.js';
import { closeMcpConnection, openMcpConnection, type McpConnection } from '../../platform/mcp-connection.js';
import { errorResult, mapCallResult } from './map-call-result.js';
import { withBearer } from './mcp-headers.js';

export interface McpToolHostOptions {
  /** Server label; the host is named `mcp:<label>` and its tools carry that `source`. */
  readonly name: string;
  /** Streamable HTTP endpoint, e.g. `http://127.0.0.1:3100/mcp`. */
  readonly url: string;
  /** Sent as `Authorization: Bearer …` on every request; never logged nor put in an error message. */
  readonly bearerToken?: string;
  /**
   * Further headers on every request (a tenant id); `bearerToken` wins over an `Authorization` here. The SDK sends
   * the negotiated `mcp-protocol-version` itself; one set here replaces it.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /** Per request (initialize, list, call). Default 30 000 ms. A timed-out call is not retried: it may have run. */
  readonly timeoutMs?: number;
  /** How long `list()` serves its cached answer. Default 60 000 ms; `notifications/tools/list_changed` clears it. */
  readonly listCacheMs?: number;
  /** Longest `content` handed to the model; longer results end in `…[truncated N chars]`. Default 20 000 (`tools.maxResultChars`). */
  readonly maxResultChars?: number;
  readonly logger?: Logger;
  /**
   * Argument that carries the user a tool acts for (e.g. `user_id`). The host fills it with the turn's bound user,
   * hides it from the schema the model sees, and refuses a call whose arguments name another user.
   */
  readonly userIdArgument?: string;
  /** What people see while a tool of this server runs, by tool name (the server itself has no such field). */
  readonly toolLabels?: Readonly<Record<string, ToolLabel>>;
  /** Tools whose calls someone approves first, and who (`mcp.servers[].approval`). */
  readonly approval?: { readonly tools: readonly string[]; readonly by: ApprovalDecider };
  /** The `fetch` calls go out with: Palaver passes its own (`src/platform/outgoing-http.ts`). Default: the global `fetch`. */
  readonly fetch?: FetchLike;
  /** Clock for the list cache. Default `Date.now`. */
  readonly now?: () => number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_LIST_CACHE_MS = 60_000;
/** Guards against a server whose `nextCursor` never ends. */
const MAX_LIST_PAGES = 50;
/** Attempts to open a session before the server counts as unreachable; the first retry is immediate. */
const CONNECT_ATTEMPTS = 3;
const CONNECT_RETRY_DELAY_MS = 100;
const CLIENT_INFO = { name: 'palaver', version: '0.1.0' };
const REFUSED_OTHER_USER = 'Refused: this tool acts only for the current user';

/**
 * Carries the calling turn's correlation id down to the transport's fetch, which runs in the same async context,
 * so each HTTP request of a tool call carries `x-correlation-id` without sharing mutable state between calls.
 */
const correlation = new AsyncLocalStorage<string>();

type Connection = McpConnection;

interface Catalog {
  readonly descriptors: readonly ToolDescriptor[];
  readonly byName: ReadonlyMap<string, Tool>;
  readonly loadedAt: number;
}

/**
 * A {@link ToolHost} for one MCP server over Streamable HTTP. It connects on first use, reconnects once when the
 * server lost the session (restart, HTTP 404, connection refused or reset), and turns every tool-level failure
 * (error result, JSON-RPC error, timeout, unreachable server) into an `isError` result for the model.
 *
 * @example
 * const host = new McpToolHost({ name: 'logistics', url: 'http://127.0.0.1:3100/mcp', bearerToken, userIdArgument: 'user_id' });
 * const tools = await host.list();
 * const result = await host.call('get_user_cargoes', {}, ctx); // user_id is set to ctx.userId
 * await host.close();
 */
export class McpToolHost implements ToolHost {
  readonly name: string;
  private readonly label: string;
  private readonly url: URL;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly timeoutMs: number;
  private readonly listCacheMs: number;
  private readonly maxResultChars: number;
  private readonly userIdArgument: string | undefined;
  private readonly toolLabels: Readonly<Record<string, ToolLabel>>;
  private readonly approval: { readonly tools: readonly string[]; readonly by: ApprovalDecider } | undefined;
  private readonly logger: Logger;
  private readonly fetch: FetchLike;
  private readonly now: () => number;
  /** Removes the token from text that came from elsewhere (a server may echo request headers in an error body). */
  private readonly redact: (text: string) => string;

  private connecting: Promise<Connection> | undefined;
  private connection: Connection | undefined;
  private catalog: Catalog | undefined;
  private loadingCatalog: Promise<Catalog> | undefined;
  /** Bumped by `list_changed`, so a list fetched before the notification is not cached after it. */
  private catalogGeneration = 0;
  private closing: Promise<void> | undefined;

  constructor(options: McpToolHostOptions) {
    this.label = options.name;
    this.name = `mcp:${options.name}`;
    try {
      this.url = new URL(options.url);
    } catch (error) {
      throw new ConfigError(
        `MCP server ${options.name}: url is not an absolute URL`,
        [{ path: 'mcp.servers.url', message: 'expected e.g. http://host:3100/mcp' }],
        { cause: error },
      );
    }
    const token = options.bearerToken;
    this.headers = withBearer(options.headers, token) ?? {};
    this.redact = token ? (text) => text.split(token).join('[redacted]') : (text) => text;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.listCacheMs = options.listCacheMs ?? DEFAULT_LIST_CACHE_MS;
    this.maxResultChars = options.maxResultChars ?? DEFAULT_MAX_TOOL_RESULT_CHARS;
    this.userIdArgument = options.userIdArgument;
    this.toolLabels = options.toolLabels ?? {};
    this.approval = options.approval;
    this.logger = (options.logger ?? silentLogger()).child({ toolHost: this.name });
    this.now = options.now ?? Date.now;
    const baseFetch = options.fetch ?? (globalThis.fetch as FetchLike);
    this.fetch = (url, init) => {
      // The SDK hands one long-lived AbortSignal to every request of a session, to which each call adds a listener;
      // undici's fetch raises that signal's listener limit itself (Node's `getMaxListeners` throws on Node 20 for a
      // signal whose limit was set to 0, so none is set here).
      const correlationId = correlation.getStore();
      if (correlationId === undefined) return baseFetch(url, init);
      const headers = new Headers(init?.headers);
      headers.set('x-correlation-id', correlationId);
      return baseFetch(url, { ...init, headers });
    };
  }

  /**
   * The server's tools, cached for `listCacheMs`. Rejects with a `ToolError` when the server cannot be reached
   * (`mcp_unreachable`), refuses the token (`mcp_auth_failed`), times out (`mcp_timeout`) or answers badly.
   */
  async list(): Promise<readonly ToolDescriptor[]> {
    this.assertOpen();
    try {
      return (await this.loadCatalog(false)).descriptors;
    } catch (error) {
      throw this.toToolError(error);
    }
  }

  /**
   * Calls a tool for the turn's user. Resolves with `isError: true` for every tool-level failure, including an
   * unknown tool name (the model may have made it up) and a refused user id. Rejects only when the host is closed.
   */
  async call(name: string, args: Readonly<Record<string, unknown>>, ctx: ToolCallContext): Promise<ToolResult> {
    this.assertOpen();
    const log = this.logger.child({ correlationId: ctx.correlationId, tool: name, callId: ctx.callId });

    const key = this.userIdArgument;
    const claimed = key === undefined ? undefined : args[key];
    // null/undefined is no claim; any other value must be the bound user, or the model is acting for someone else.
    if (key !== undefined && claimed !== undefined && claimed !== null && claimed !== ctx.userId) {
      log.warn({ userId: ctx.userId, claimedUserId: String(claimed).slice(0, 100), userIdArgument: key }, 'refused MCP tool call naming another user');
      return errorResult(REFUSED_OTHER_USER);
    }

    let tool: Tool | undefined;
    try {
      tool = await this.findTool(name);
    } catch (error) {
      return this.failureResult(name, error, ctx, log);
    }
    if (!tool) return errorResult(`Unknown tool ${name}`);

    try {
      const result = await this.withSession(
        ({ client }) =>
          correlation.run(ctx.correlationId, () =>
            client.callTool(
              { name, arguments: this.bindUser(tool, args, ctx.userId), _meta: { correlationId: ctx.correlationId, idempotencyKey: ctx.idempotencyKey } },
              undefined,
              { timeout: this.timeoutMs, signal: ctx.signal },
            ),
          ),
        ctx.signal,
      );
      return mapCallResult(name, result, this.maxResultChars);
    } catch (error) {
      return this.failureResult(name, error, ctx, log);
    }
  }

  /** Ends the MCP session and the connection. Safe to call twice; later `list`/`call` reject with `tool_host_closed`. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const connecting = this.connecting;
    this.connecting = undefined;
    this.connection = undefined;
    this.catalog = undefined;
    const connection = await connecting?.catch(() => undefined);
    if (!connection) return;
    await closeMcpConnection(connection);
  }

  private assertOpen(): void {
    if (this.closing) throw new ToolError('tool_host_closed', this.name, `${this.name} is closed; create a new McpToolHost to reconnect`);
  }

  /** The connection, opened once and shared; a failed open is forgotten so the next use tries again. */
  private connect(): Promise<Connection> {
    this.assertOpen();
    if (!this.connecting) {
      const connecting = this.open();
      this.connecting = connecting;
      connecting.catch(() => {
        if (this.connecting === connecting) this.connecting = undefined;
      });
    }
    return this.connecting;
  }

  private async open(): Promise<Connection> {
    let opened: Connection | undefined;
    const connection = await openMcpConnection({
      url: this.url,
      headers: this.headers,
      fetch: this.fetch,
      timeoutMs: this.timeoutMs,
      clientInfo: CLIENT_INFO,
      configure: (client) => {
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
          this.catalogGeneration += 1;
          this.catalog = undefined;
        });
        // Transport errors also surface as rejected requests; the SDK additionally reports background ones (the
        // optional GET stream) here, which are worth no more than a debug line.
        client.onerror = (error) => this.logger.debug({ reason: this.redact(describe(error)) }, 'MCP transport error');
        client.onclose = () => {
          if (opened) this.forget(opened);
        };
      },
    });
    opened = connection;
    this.connection = connection;
    return connection;
  }

  private forget(connection: Connection): void {
    if (this.connection !== connection) return;
    this.connection = undefined;
    this.connecting = undefined;
    // A new session may be a restarted server with other tools.
    this.catalog = undefined;
  }

  /**
   * Runs `op` on the live connection. When the session is gone (server restart, 404, refused or reset connection,
   * closed transport) it reconnects and runs `op` once more; any other failure, a timeout above all, is rethrown.
   */
  private async withSession<T>(op: (connection: Connection) => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      const connection = await this.connectPatiently(signal);
      try {
        return await op(connection);
      } catch (error) {
        if (attempt >= 2 || classifyMcpError(error, signal).kind !== 'session_lost') throw error;
        this.logger.info('MCP session lost; reconnecting once');
        this.forget(connection);
        await connection.client.close().catch(() => undefined);
      }
    }
  }

  /**
   * Opening a session (initialize) has no side effects, so unlike a tool call it is tried again on a connection
   * failure: right after a server restart the first request often goes out on a pooled keep-alive socket that the
   * old server already closed ("other side closed").
   */
  private async connectPatiently(signal?: AbortSignal): Promise<Connection> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.connect();
      } catch (error) {
        if (attempt >= CONNECT_ATTEMPTS || classifyMcpError(error, signal).kind !== 'session_lost') throw error;
        await delay(CONNECT_RETRY_DELAY_MS * (attempt - 1));
      }
    }
  }

  private async findTool(name: string): Promise<Tool | undefined> {
    const catalog = await this.loadCatalog(false);
    const tool = catalog.byName.get(name);
    if (tool || this.now() - catalog.loadedAt < 1_000) return tool;
    // A cached list may predate a tool the server added; look once more before calling the name unknown.
    return (await this.loadCatalog(true)).byName.get(name);
  }

  private loadCatalog(force: boolean): Promise<Catalog> {
    const cached = this.catalog;
    if (!force && cached && this.now() - cached.loadedAt < this.listCacheMs) return Promise.resolve(cached);
    if (!this.loadingCatalog) {
      const generation = this.catalogGeneration;
      const loading = this.withSession(({ client }) => this.fetchCatalog(client)).then((catalog) => {
        if (generation === this.catalogGeneration && !this.closing) this.catalog = catalog;
        return catalog;
      });
      this.loadingCatalog = loading;
      const clear = (): void => {
        if (this.loadingCatalog === loading) this.loadingCatalog = undefined;
      };
      loading.then(clear, clear);
    }
    return this.loadingCatalog;
  }

  private async fetchCatalog(client: McpConnection['client']): Promise<Catalog> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page += 1) {
      const result = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: this.timeoutMs });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (cursor === undefined) break;
    }
    if (cursor !== undefined) this.logger.warn({ pages: MAX_LIST_PAGES }, 'MCP tool list still paginating; using the tools read so far');
    return {
      descriptors: tools.map((tool) => ({
        name: tool.name,
        description: tool.description ?? tool.title ?? '',
        parameters: this.userIdArgument ? withoutProperty(tool.inputSchema, this.userIdArgument) : tool.inputSchema,
        source: this.name,
        ...(Object.hasOwn(this.toolLabels, tool.name) ? { label: this.toolLabels[tool.name]! } : {}),
        ...(this.approval?.tools.includes(tool.name) ? { approval: approvedBy(this.approval.by) } : {}),
      })),
      byName: new Map(tools.map((tool) => [tool.name, tool])),
      loadedAt: this.now(),
    };
  }

  /** Sets the user argument to the bound user when the tool declares it, and drops any model-written copy otherwise. */
  private bindUser(tool: Tool, args: Readonly<Record<string, unknown>>, userId: string): Record<string, unknown> {
    const key = this.userIdArgument;
    if (key === undefined) return { ...args };
    const { [key]: _claimed, ...rest } = args;
    const declared = Object.hasOwn(tool.inputSchema.properties ?? {}, key);
    return declared ? { ...rest, [key]: userId } : rest;
  }

  private failureResult(name: string, error: unknown, ctx: ToolCallContext, log: Logger): ToolResult {
    if (error instanceof ToolError) throw error; // host closed: a protocol error, not the tool's failure
    const failure = classifyMcpError(error, ctx.signal);
    log.warn({ failure: failure.kind, reason: this.redact(describe(error)) }, 'MCP tool call failed');
    switch (failure.kind) {
      case 'aborted':
        return errorResult(`Tool ${name} was cancelled`);
      case 'timeout':
        return errorResult(`Tool ${name} timed out after ${this.timeoutMs} ms`);
      case 'session_lost':
        return errorResult(`MCP server ${this.label} is unreachable`);
      case 'auth':
        log.error({ status: failure.status }, 'MCP server refused our credentials; check its bearer token');
        return errorResult(`MCP server ${this.label} refused our credentials; tool ${name} is unavailable`);
      case 'http':
        return errorResult(`MCP server ${this.label} failed (HTTP ${failure.status})`);
      case 'rpc':
      case 'other':
        return errorResult(`Tool ${name} failed: ${this.redact(failure.message).slice(0, 500)}`);
    }
  }

  private toToolError(error: unknown): ToolError {
    if (error instanceof ToolError) return error;
    const failure = classifyMcpError(error);
    const server = `MCP server ${this.label} (${this.url.origin}${this.url.pathname})`;
    switch (failure.kind) {
      case 'auth':
        return new ToolError('mcp_auth_failed', this.name, `${server}: authentication failed (HTTP ${failure.status}); check its bearer token`, {
          cause: error,
        });
      case 'session_lost':
        return new ToolError('mcp_unreachable', this.name, `${server} is unreachable; is it running?`, { cause: error });
      case 'timeout':
      case 'aborted':
        return new ToolError('mcp_timeout', this.name, `${server} did not answer within ${this.timeoutMs} ms`, { cause: error });
      case 'http':
        return new ToolError('mcp_http_error', this.name, `${server} answered HTTP ${failure.status}`, { cause: error });
      case 'rpc':
      case 'other':
        return new ToolError('mcp_protocol_error', this.name, `${server} failed: ${this.redact(failure.message).slice(0, 500)}`, {
          cause: error,
        });
    }
  }
}

/** The schema without one property, so the model is not asked for a value the host supplies. */
export function withoutProperty(schema: Tool['inputSchema'], key: string): JsonSchema {
  const properties = schema.properties;
  if (!properties || !Object.hasOwn(properties, key)) return schema;
  const { [key]: _removed, ...rest } = properties;
  const required = Array.isArray(schema.required) ? schema.required.filter((name) => name !== key) : undefined;
  return { ...schema, properties: rest, ...(required ? { required } : {}) };
}

/** A short reason for logs: the message only, never request options (which hold the token). */
function describe(error: unknown): string {
  return error instanceof Error ? error.message.slice(0, 300) : String(error).slice(0, 300);
}

function delay(ms: number): Promise<void> {
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
}

/** The approval rule of a server's listed tool: always the same decider. */
function approvedBy(by: ApprovalDecider): NonNullable<ToolDescriptor['approval']> {
  return () => by;
}
