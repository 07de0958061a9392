import type { ModelEndpointConfig, PalaverConfig } from '../config/schema.js';
import type { ModelProvider, ModelSet } from '../domain/ports/model-provider.js';
import type { OpenAIClientOptions } from './openai-client.js';
import { OpenAIChatProvider } from './openai-chat-provider.js';
import { OpenAIResponsesProvider } from './openai-responses-provider.js';

/**
 * Builds the primary and fallback providers of `config.model`. The fallback inherits `provider`, `baseUrl` and
 * `apiKey` from the primary when it does not set them.
 */
export function createModelSet(config: PalaverConfig['model'], options: OpenAIClientOptions = {}): ModelSet {
  const { fallback, prices: _prices, currency: _currency, ...primary } = config;
  const primaryProvider = createEndpointProvider(primary, options);
  if (!fallback) return { primary: primaryProvider };
  const fallbackConfig: ModelEndpointConfig = {
    ...primary,
    ...fallback,
    provider: fallback.provider ?? primary.provider,
    baseUrl: fallback.baseUrl ?? primary.baseUrl,
    apiKey: fallback.apiKey ?? primary.apiKey,
  };
  return { primary: primaryProvider, fallback: createEndpointProvider(fallbackConfig, options) };
}

/** One endpoint, no fallback. */
export function createEndpointProvider(config: ModelEndpointConfig, options: OpenAIClientOptions = {}): ModelProvider {
  switch (config.provider) {
    case 'openai-chat':
      return new OpenAIChatProvider(config, options);
    case 'openai-responses':
      return new OpenAIResponsesProvider(config, options);
  }
}
