import type OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionAssistantMessageParam,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import type { ModelEndpointConfig } from '../config/schema.js';
import { ModelError } from '../domain/errors.js';
import type { TokenUsage } from '../domain/model.js';
import type {
  ModelCapabilities,
  ModelInputItem,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelToolCall,
  ModelToolSpec,
} from '../domain/ports/model-provider.js';
import { createOpenAIClient, requestOptions, toModelError, type OpenAIClientOptions } from './openai-client.js';

/** The slice of the SDK client this provider uses. */
export type ChatCompletionsClient = Pick<OpenAI, 'chat'>;

export interface OpenAIChatProviderOptions extends OpenAIClientOptions {
  /** A ready client (tests, shared pools); built from the config when absent. */
  readonly client?: ChatCompletionsClient;
}

/**
 * A `ModelProvider` over Chat Completions (`POST /chat/completions`), the API every OpenAI-compatible server speaks:
 * OpenAI, xAI, Ollama, vLLM, llama.cpp. It sends only Chat Completions parameters and tolerates a missing `usage`.
 * Streams when the request has `onTextDelta`. No response chains and no hosted MCP: the caller sends the whole
 * conversation each time.
 *
 * @example
 * const model = new OpenAIChatProvider({ provider: 'openai-chat', name: 'llama3.1', baseUrl: 'http://127.0.0.1:11434/v1',
 *   timeoutMs: 60_000, maxRetries: 2 });
 * const reply = await model.complete({ instructions: 'Be brief.', input: [{ type: 'message', role: 'user', content: 'Hi' }], tools: [] });
 */
export class OpenAIChatProvider implements ModelProvider {
  readonly kind = 'openai-chat';
  readonly model: string;
  readonly capabilities: ModelCapabilities = { responseChains: false, hostedMcp: false };
  readonly maxOutputTokens: number | undefined;
  readonly #client: ChatCompletionsClient;
  readonly #config: ModelEndpointConfig;

  constructor(config: ModelEndpointConfig, options: OpenAIChatProviderOptions = {}) {
    this.model = config.name;
    this.maxOutputTokens = config.maxOutputTokens;
    this.#config = config;
    this.#client = options.client ?? createOpenAIClient(config, options);
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const params: ChatCompletionCreateParamsBase = {
      model: this.model,
      messages: toChatMessages(request.instructions, request.input, this.#config.images !== false),
      ...(request.tools.length > 0 ? { tools: toChatTools(request.tools) } : {}),
      ...(request.output
        ? { response_format: { type: 'json_schema', json_schema: { name: request.output.name, schema: { ...request.output.schema }, strict: true } } }
        : {}),
      ...(this.#config.temperature !== undefined ? { temperature: this.#config.temperature } : {}),
      ...(this.#config.topP !== undefined ? { top_p: this.#config.topP } : {}),
      ...(this.#config.maxOutputTokens !== undefined ? { max_completion_tokens: this.#config.maxOutputTokens } : {}),
    };
    try {
      return request.onTextDelta ? await this.#stream(params, request, request.onTextDelta) : await this.#once(params, request);
    } catch (error) {
      throw toModelError(error, this.model, this.#config.apiKey);
    }
  }

  async #once(params: ChatCompletionCreateParamsBase, request: ModelRequest): Promise<ModelResponse> {
    const completion: ChatCompletion = await this.#client.chat.completions.create({ ...params, stream: false }, requestOptions(request));
    const message = completion.choices[0]?.message;
    if (!message) throw new ModelError('invalid_output', this.model, `Model ${this.model} answered without any choice.`);
    const toolCalls: ModelToolCall[] = [];
    for (const [index, call] of (message.tool_calls ?? []).entries()) {
      // Custom (free-text) tools are never offered, so only function calls can come back.
      if (call.type !== 'function') continue;
      toolCalls.push({ callId: call.id || syntheticCallId(index), name: call.function.name, arguments: call.function.arguments || '{}' });
    }
    return {
      model: this.model,
      text: message.content ?? '',
      toolCalls,
      usage: chatUsage(completion.usage),
    };
  }

  async #stream(params: ChatCompletionCreateParamsBase, request: ModelRequest, onTextDelta: (delta: string) => void): Promise<ModelResponse> {
    const stream = await this.#client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } }, requestOptions(request));
    let text = '';
    let usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
    // Tool calls arrive as fragments keyed by `index`: the first carries id and name, later ones append arguments.
    const calls = new Map<number, { id: string; name: string; arguments: string }>();
    for await (const chunk of stream) {
      if (chunk.usage) usage = chatUsage(chunk.usage);
      const delta = chunk.choices[0]?.delta;
      if (!delta) continue;
      if (delta.content) {
        text += delta.content;
        onTextDelta(delta.content);
      }
      for (const fragment of delta.tool_calls ?? []) {
        const call = calls.get(fragment.index) ?? { id: '', name: '', arguments: '' };
        if (fragment.id) call.id = fragment.id;
        // Same rule as the SDK's own accumulator: a name is sent whole, arguments in pieces.
        if (fragment.function?.name) call.name = fragment.function.name;
        if (fragment.function?.arguments) call.arguments += fragment.function.arguments;
        calls.set(fragment.index, call);
      }
    }
    const toolCalls = [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]): ModelToolCall => ({ callId: call.id || syntheticCallId(index), name: call.name, arguments: call.arguments || '{}' }));
    const nameless = toolCalls.find((call) => !call.name);
    if (nameless) throw new ModelError('invalid_output', this.model, `Model ${this.model} streamed a tool call without a name.`);
    return { model: this.model, text, toolCalls, usage };
  }
}

/**
 * Provider-neutral items → Chat Completions messages. Instructions become the leading system message; consecutive
 * `tool_call` items (one model reply asking for several tools) join ONE assistant message, together with the text the
 * assistant wrote just before them, because that is the shape the model produced and strict servers expect back.
 */
export function toChatMessages(instructions: string, input: readonly ModelInputItem[], images = true): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = [];
  if (instructions) messages.push({ role: 'system', content: instructions });
  // The assistant message tool calls may still be appended to; reset by anything else.
  let open: ChatCompletionAssistantMessageParam | undefined;
  for (const item of input) {
    switch (item.type) {
      case 'message':
        if (item.role === 'assistant') {
          open = { role: 'assistant', content: item.content };
          messages.push(open);
        } else {
          open = undefined;
          const shown = images && item.role === 'user' ? (item.images ?? []).filter((image) => image.data !== undefined) : [];
          if (shown.length === 0) messages.push({ role: item.role, content: item.content });
          // A person's attached images go as `image_url` parts beside the text, inline as data URLs.
          else
            messages.push({
              role: 'user',
              content: [
                { type: 'text', text: item.content },
                ...shown.map((image) => ({ type: 'image_url' as const, image_url: { url: `data:${image.mimeType};base64,${image.data}` } })),
              ],
            });
        }
        break;
      case 'tool_call': {
        if (!open) {
          open = { role: 'assistant', content: null };
          messages.push(open);
        }
        open.tool_calls = [...(open.tool_calls ?? []), { id: item.callId, type: 'function', function: { name: item.name, arguments: item.arguments } }];
        break;
      }
      case 'tool_result':
        open = undefined;
        messages.push({ role: 'tool', tool_call_id: item.callId, content: item.output });
        break;
    }
  }
  return messages;
}

// The registry hands out the same specs array while the tools do not change, so its wire form is built once.
const chatTools = new WeakMap<readonly ModelToolSpec[], ChatCompletionTool[]>();

function toChatTools(specs: readonly ModelToolSpec[]): ChatCompletionTool[] {
  let tools = chatTools.get(specs);
  if (tools === undefined) {
    tools = specs.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: { ...tool.parameters } } }));
    chatTools.set(specs, tools);
  }
  return tools;
}

/** Some local servers omit tool call ids; the turn still needs one to pair the result with the call. */
function syntheticCallId(index: number): string {
  return `call_${Date.now().toString(36)}_${index}_${Math.random().toString(36).slice(2, 8)}`;
}

/** Tokens of a completion; cached prompt tokens (`prompt_tokens_details.cached_tokens`) are within the prompt tokens. */
function chatUsage(usage: CompletionUsage | null | undefined): TokenUsage {
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  return { inputTokens: usage?.prompt_tokens ?? 0, outputTokens: usage?.completion_tokens ?? 0, ...(cached > 0 ? { cachedInputTokens: cached } : {}) };
}
