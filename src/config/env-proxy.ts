/**
 * Whether Node was asked to send outgoing requests through the proxy named in HTTP(S)_PROXY (`NODE_USE_ENV_PROXY=1`
 * or `--use-env-proxy`, Node 24). Node applies that to the global `fetch` only, so Palaver's own HTTP transport then
 * steps aside for it (see `src/http-client/http-transport.ts`).
 */
export function nodeUsesEnvProxy(env: NodeJS.ProcessEnv = process.env, execArgv: readonly string[] = process.execArgv): boolean {
  return env.NODE_USE_ENV_PROXY === '1' || execArgv.includes('--use-env-proxy') || (env.NODE_OPTIONS ?? '').split(/\s+/).includes('--use-env-proxy');
}
