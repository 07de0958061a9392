/**
 * The one cap on a tool result's size (`tools.maxResultChars`), used wherever a result enters Palaver: the turn's
 * tool calls (local tools, MCP servers, tool hosts passed in, results a Redis worker sent), a `palaver worker` before
 * it publishes, and each MCP server (`mcp.servers[].maxResultChars`). A result can be any size a tool or a peer on
 * Redis makes it; the model request, the store and the web stream must not be.
 */

/** `tools.maxResultChars` and the MCP servers' cap when config sets none. */
export const DEFAULT_MAX_TOOL_RESULT_CHARS = 20_000;

/**
 * `text` when it is at most `maxChars` long; else its first `maxChars` characters (never half of a surrogate pair)
 * and a notice the model reads, `\n…[truncated N chars]`, N being the characters cut.
 */
export function capToolText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const code = text.charCodeAt(maxChars - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? maxChars - 1 : maxChars;
  return `${text.slice(0, end)}\n…[truncated ${text.length - end} chars]`;
}

/**
 * A result with its `content` capped by {@link capToolText}, and its `structured` value left out when the content was
 * cut or the value's JSON is longer than `maxChars` (a cut JSON value is no value; the capped text still says what
 * came back). Returns the same object when nothing is over the cap.
 */
export function capToolResult<Result extends { readonly content: string; readonly structured?: unknown }>(result: Result, maxChars: number): Result {
  const content = capToolText(result.content, maxChars);
  const dropStructured = result.structured !== undefined && (content !== result.content || jsonLength(result.structured) > maxChars);
  if (content === result.content && !dropStructured) return result;
  const capped: Result = { ...result, content };
  if (dropStructured) delete (capped as { structured?: unknown }).structured;
  return capped;
}

/** The length of a value's JSON; a value with none (a cycle, a BigInt) counts as over any cap. */
function jsonLength(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}
