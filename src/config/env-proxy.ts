/**
 * Whether Node was asked to send outgoing requests through the proxy named in HTTP(S)_PROXY (`NODE_USE_ENV_PROXY=1`
 * or `--use-env-proxy`, Node 24). Node applies that to its own global `fetch` and agents, not to the connection pool
 * of Palaver's HTTP transport, which then steps aside for the global `fetch` (see `src/http-client/http-transport.ts`).
 */
export function nodeUsesEnvProxy(env: NodeJS.ProcessEnv = process.env, execArgv: readonly string[] = process.execArgv): boolean {
  return env.NODE_USE_ENV_PROXY === '1' || execArgv.includes('--use-env-proxy') || (env.NODE_OPTIONS ?? '').split(/\s+/).includes('--use-env-proxy');
}
