export { OpenAIChatProvider, toChatMessages } from './openai-chat-provider.js';
export type { ChatCompletionsClient, OpenAIChatProviderOptions } from './openai-chat-provider.js';
export { OpenAIResponsesProvider, toResponsesInput } from './openai-responses-provider.js';
export type { OpenAIResponsesProviderOptions, ResponsesClient } from './openai-responses-provider.js';
export { createEndpointProvider, createModelSet } from './create-model-set.js';
export {
  createOpenAIClient,
  DEFAULT_OPENAI_BASE_URL,
  isStaleChainError,
  keyOptions,
  requestOptions,
  toModelError,
} from './openai-client.js';
export type { OpenAIClientOptions } from './openai-client.js';
export { isLocalEndpoint, requireModelKeys } from './api-key-policy.js';
