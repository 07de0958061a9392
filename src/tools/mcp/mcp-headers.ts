/**
 * The headers an MCP server is sent: the configured ones, then `Authorization: Bearer <token>` when a token is set.
 * The token wins over a configured `Authorization` in any spelling, so one request never carries two credentials.
 * Undefined when there are none.
 */
export function withBearer(headers: Readonly<Record<string, string>> | undefined, bearerToken: string | undefined): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (bearerToken && name.toLowerCase() === 'authorization') continue;
    out[name] = value;
  }
  if (bearerToken) out.Authorization = `Bearer ${bearerToken}`;
  return Object.keys(out).length > 0 ? out : undefined;
}
