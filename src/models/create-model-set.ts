import type { ModelEndpointConfig, PalaverConfig } from '../config/schema.js';
import { ConfigError } from '../domain/errors.js';
import type { ModelCapabilities, ModelProvider, ModelRequest, ModelResponse, ModelSet } from '../domain/ports/model-provider.js';
import type { OpenAIClientOptions } from './openai-client.js';

/**
 * Builds the primary and fallback providers of `config.model`. The fallback inherits `provider`, `baseUrl` and
 * `apiKey` from the primary when it does not set them. The `openai` SDK loads with the first model call, not at
 * start-up: a server reaches `/health` without it.
 */
export function createModelSet(config: PalaverConfig['model'], options: OpenAIClientOptions = {}): ModelSet {
  const { fallback, prices: _prices, script: _script, ...primary } = config;
  if (primary.provider === 'scripted') {
    // The scripted model is a server Palaver runs; createPalaver starts it and passes its endpoint here.
    throw new ConfigError('model.provider "scripted" runs inside a Palaver: use createPalaver (or startOfflineModel first).', [
      { path: 'model.provider', message: 'scripted needs createPalaver' },
    ]);
  }
  const endpoint: ModelEndpointConfig = { ...primary, provider: primary.provider };
  const primaryProvider = createEndpointProvider(endpoint, options);
  if (!fallback) return { primary: primaryProvider };
  const fallbackConfig: ModelEndpointConfig = {
    ...endpoint,
    ...fallback,
    provider: fallback.provider ?? primary.provider,
    baseUrl: fallback.baseUrl ?? primary.baseUrl,
    apiKey: fallback.apiKey ?? primary.apiKey,
  };
  return { primary: primaryProvider, fallback: createEndpointProvider(fallbackConfig, options) };
}

/** One endpoint, no fallback; its SDK client is made on the first call. */
export function createEndpointProvider(config: ModelEndpointConfig, options: OpenAIClientOptions = {}): ModelProvider {
  return new DeferredProvider(config, options);
}

/** What each provider kind can do, known from config alone (the providers declare the same). */
const CAPABILITIES: Readonly<Record<ModelEndpointConfig['provider'], ModelCapabilities>> = {
  'openai-chat': { responseChains: false, hostedMcp: false },
  'openai-responses': { responseChains: true, hostedMcp: true },
};

/** A provider whose implementation (and the SDK under it) loads on the first `complete`. */
class DeferredProvider implements ModelProvider {
  readonly kind: string;
  readonly model: string;
  readonly capabilities: ModelCapabilities;
  readonly maxOutputTokens: number | undefined;
  readonly #config: ModelEndpointConfig;
  readonly #options: OpenAIClientOptions;
  #provider: Promise<ModelProvider> | undefined;

  constructor(config: ModelEndpointConfig, options: OpenAIClientOptions) {
    this.kind = config.provider;
    this.model = config.name;
    this.capabilities = CAPABILITIES[config.provider];
    this.maxOutputTokens = config.maxOutputTokens;
    this.#config = config;
    this.#options = options;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    return (await (this.#provider ??= this.#load())).complete(request);
  }

  async #load(): Promise<ModelProvider> {
    switch (this.#config.provider) {
      case 'openai-chat': {
        const { OpenAIChatProvider } = await import('./openai-chat-provider.js');
        return new OpenAIChatProvider(this.#config, this.#options);
      }
      case 'openai-responses': {
        const { OpenAIResponsesProvider } = await import('./openai-responses-provider.js');
        return new OpenAIResponsesProvider(this.#config, this.#options);
      }
    }
  }
}
