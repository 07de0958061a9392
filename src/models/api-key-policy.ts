import { isIP } from 'node:net';
import type { PalaverConfig } from '../config/schema.js';
import { ConfigError } from '../domain/errors.js';

/** OpenAI's own endpoint, used when `baseUrl` is not configured. (Here, not in openai-client.ts: that loads the SDK.) */
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';

/**
 * True when an endpoint is on this machine or its network — loopback, a private or link-local address, `localhost`,
 * a name without a dot (a compose service such as `ollama`) or under `.local` / `.internal` — where model servers
 * (Ollama, vLLM, llama.cpp) commonly run without a key. Anywhere else a key is required.
 */
export function isLocalEndpoint(baseUrl: string): boolean {
  let host: string;
  try {
    host = new URL(baseUrl).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return false;
  }
  if (isIP(host) === 4) {
    const [a = 0, b = 0] = host.split('.').map(Number);
    return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254);
  }
  if (isIP(host) === 6) return host === '::1' || /^f[cd]/.test(host) || /^fe[89ab]/.test(host);
  return !host.includes('.') || /\.(localhost|local|internal)$/.test(host);
}

/** A model endpoint the config calls, where its key would be set, and the variable that sets it (primary only). */
interface Endpoint {
  readonly path: string;
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly variable?: string;
}

/** Every endpoint a turn may call: the primary model, its fallback, the staged flow's stage models and the stage classifier's model. */
function endpointsOf(config: PalaverConfig): Endpoint[] {
  const { model } = config;
  const primary = { baseUrl: model.baseUrl ?? DEFAULT_OPENAI_BASE_URL, apiKey: model.apiKey };
  // Others inherit the primary's endpoint and key unless they name their own (as createModelSet and the flows build them).
  const inherit = (path: string, own: { baseUrl?: string | undefined; apiKey?: string | undefined }): Endpoint => ({
    path,
    baseUrl: own.baseUrl ?? primary.baseUrl,
    apiKey: own.apiKey ?? primary.apiKey,
  });
  const endpoints: Endpoint[] = [{ path: 'model.apiKey', ...primary, variable: 'PALAVER_LLM_API_KEY' }];
  if (model.fallback) endpoints.push(inherit('model.fallback.apiKey', model.fallback));
  const stages = config.agent.flow === 'staged' && config.agent.type !== undefined ? config.staged.types[config.agent.type] : undefined;
  for (const [stage, settings] of Object.entries(stages ?? {})) endpoints.push(inherit(`staged.types.${config.agent.type}.${stage}.apiKey`, settings));
  const { classifier } = config.focus;
  if (classifier.enabled && classifier.model && config.focus.stages.length > 0) endpoints.push(inherit('focus.classifier.model.apiKey', classifier.model));
  return endpoints;
}

/**
 * Refuses a config whose model endpoint needs a key it does not have, before anything starts: without it every
 * message would be answered with an apology and the log would hold a 401. The scripted model needs none.
 * @throws ConfigError naming the setting and the environment variable.
 */
export function requireModelKeys(config: PalaverConfig): void {
  if (config.model.provider === 'scripted') return;
  const missing = endpointsOf(config).filter((endpoint) => endpoint.apiKey === undefined && !isLocalEndpoint(endpoint.baseUrl));
  if (missing.length === 0) return;
  const lines = missing.map(
    (endpoint) => `  - ${endpoint.path} is not set, and ${endpoint.baseUrl} needs a key${endpoint.variable ? `: put it in ${endpoint.variable}` : ''}`,
  );
  throw new ConfigError(
    [
      'The model needs an API key:',
      ...lines,
      'Keep the key in the environment, not in the config file. To try the agent without a key, use the built-in offline model: model.provider: scripted.',
    ].join('\n'),
    missing.map((endpoint) => ({ path: endpoint.path, message: `required for ${endpoint.baseUrl}` })),
  );
}
