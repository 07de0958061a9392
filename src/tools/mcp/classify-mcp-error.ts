import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

/** Why an MCP request failed, sorted by what the host should do about it. */
export type McpFailure =
  /** No answer within the timeout. The tool may have run, so it is never retried. */
  | { readonly kind: 'timeout' }
  /** The turn's signal aborted the call. */
  | { readonly kind: 'aborted' }
  /**
   * The session or connection is gone: HTTP 404 for our session id (the Streamable HTTP spec's answer after a
   * server restart), connection refused/reset, or the transport closed. Reconnecting may help.
   */
  | { readonly kind: 'session_lost' }
  /** HTTP 401/403: the bearer token was refused. Retrying with the same token cannot help. */
  | { readonly kind: 'auth'; readonly status: number }
  /** Any other HTTP status from the MCP endpoint. */
  | { readonly kind: 'http'; readonly status: number }
  /** A JSON-RPC error answer, e.g. invalid params. */
  | { readonly kind: 'rpc'; readonly code: number; readonly message: string }
  | { readonly kind: 'other'; readonly message: string };

/** Socket-level error codes (Node and undici) that mean "could not reach the server", not "the server refused". */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
]);

export function classifyMcpError(error: unknown, signal?: AbortSignal): McpFailure {
  // The SDK reports an aborted signal as a RequestTimeout McpError, so the signal is checked first.
  if (signal?.aborted) return { kind: 'aborted' };
  if (error instanceof McpError) {
    if (error.code === ErrorCode.RequestTimeout) return { kind: 'timeout' };
    if (error.code === ErrorCode.ConnectionClosed) return { kind: 'session_lost' };
    return { kind: 'rpc', code: error.code, message: error.message };
  }
  if (error instanceof StreamableHTTPError) {
    if (error.code === 404) return { kind: 'session_lost' };
    if (error.code === 401 || error.code === 403) return { kind: 'auth', status: error.code };
    if (typeof error.code === 'number' && error.code >= 100) return { kind: 'http', status: error.code };
  }
  if (hasConnectionCode(error, 0)) return { kind: 'session_lost' };
  return { kind: 'other', message: error instanceof Error ? error.message : String(error) };
}

/** fetch wraps socket errors: `TypeError('fetch failed', { cause })`, sometimes an AggregateError inside. */
function hasConnectionCode(error: unknown, depth: number): boolean {
  if (depth > 5 || typeof error !== 'object' || error === null) return false;
  const { code, cause, errors } = error as { code?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  if (Array.isArray(errors) && errors.some((inner) => hasConnectionCode(inner, depth + 1))) return true;
  return hasConnectionCode(cause, depth + 1);
}
