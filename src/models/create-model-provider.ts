import type { ModelEndpointConfig, PalaverConfig } from '../config/schema.js';
import type { ModelProvider } from '../domain/ports/model-provider.js';
import { FallbackProvider, type FallbackProviderOptions } from './fallback-provider.js';
import type { OpenAIClientOptions } from './openai-client.js';
import { OpenAIChatProvider } from './openai-chat-provider.js';
import { OpenAIResponsesProvider } from './openai-responses-provider.js';

/** The `model` section of the config; `prices` and `currency` are not needed here. */
export type ModelProviderConfig = ModelEndpointConfig & { readonly fallback?: PalaverConfig['model']['fallback'] };

export interface CreateModelProviderOptions extends OpenAIClientOptions, FallbackProviderOptions {}

/**
 * Builds the provider for `config.model`: `openai-chat` or `openai-responses`, wrapped in a `FallbackProvider` when
 * `fallback` is configured. The fallback inherits `provider`, `baseUrl` and `apiKey` from the primary when unset.
 *
 * @example
 * const model = createModelProvider(config.model, { onFallback: (error) => log.warn({ err: error }, 'model fallback') });
 */
export function createModelProvider(config: ModelProviderConfig, options: CreateModelProviderOptions = {}): ModelProvider {
  const { fallback, ...primaryConfig } = config;
  const primary = createEndpointProvider(primaryConfig, options);
  if (!fallback) return primary;
  const fallbackConfig: ModelEndpointConfig = {
    ...fallback,
    provider: fallback.provider ?? config.provider,
    baseUrl: fallback.baseUrl ?? config.baseUrl,
    apiKey: fallback.apiKey ?? config.apiKey,
  };
  return new FallbackProvider(primary, createEndpointProvider(fallbackConfig, options), options);
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
