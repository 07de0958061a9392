import type OpenAI from 'openai';
import type { Response, ResponseCreateParamsBase, ResponseInputItem, ResponseUsage, Tool } from 'openai/resources/responses/responses';
import type { ModelEndpointConfig } from '../config/schema.js';
import { ModelError } from '../domain/errors.js';
import type { TokenUsage } from '../domain/model.js';
import type {
  HostedMcpSpec,
  HostedToolCall,
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
export type ResponsesClient = Pick<OpenAI, 'responses'>;

export interface OpenAIResponsesProviderOptions extends OpenAIClientOptions {
  /** A ready client (tests, shared pools); built from the config when absent. */
  readonly client?: ResponsesClient;
}

/**
 * A `ModelProvider` over the Responses API (`POST /responses`): response chains (`previousResponseId`, so only new
 * items travel) and hosted MCP servers that the provider calls itself. Streams when the request has `onTextDelta`.
 * An unknown `previousResponseId` rejects with `ModelError('stale_chain')`; the caller then resends the whole
 * conversation without it.
 */
export class OpenAIResponsesProvider implements ModelProvider {
  readonly kind = 'openai-responses';
  readonly model: string;
  readonly capabilities: ModelCapabilities = { responseChains: true, hostedMcp: true };
  readonly maxOutputTokens: number | undefined;
  readonly #client: ResponsesClient;
  readonly #config: ModelEndpointConfig;

  constructor(config: ModelEndpointConfig, options: OpenAIResponsesProviderOptions = {}) {
    this.model = config.name;
    this.maxOutputTokens = config.maxOutputTokens;
    this.#config = config;
    this.#client = options.client ?? createOpenAIClient(config, options);
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const tools: Tool[] = [...request.tools.map(toFunctionTool), ...(request.hostedMcp ?? []).map(toMcpTool)];
    const params: ResponseCreateParamsBase = {
      model: this.model,
      input: toResponsesInput(request.input, this.#config.images !== false),
      ...(request.instructions ? { instructions: request.instructions } : {}),
      ...(tools.length > 0 ? { tools } : {}),
      ...(request.previousResponseId ? { previous_response_id: request.previousResponseId } : {}),
      ...(request.store !== undefined ? { store: request.store } : {}),
      ...(request.output ? { text: { format: { type: 'json_schema', name: request.output.name, schema: { ...request.output.schema }, strict: true } } } : {}),
      ...(this.#config.temperature !== undefined ? { temperature: this.#config.temperature } : {}),
      ...(this.#config.topP !== undefined ? { top_p: this.#config.topP } : {}),
      ...(this.#config.maxOutputTokens !== undefined ? { max_output_tokens: this.#config.maxOutputTokens } : {}),
    };
    let response: Response;
    try {
      response = request.onTextDelta
        ? await this.#stream(params, request, request.onTextDelta)
        : await this.#client.responses.create({ ...params, stream: false }, requestOptions(request));
    } catch (error) {
      throw toModelError(error, this.model, this.#config.apiKey);
    }
    return this.#read(response);
  }

  async #stream(params: ResponseCreateParamsBase, request: ModelRequest, onTextDelta: (delta: string) => void): Promise<Response> {
    const stream = await this.#client.responses.create({ ...params, stream: true }, requestOptions(request));
    let final: Response | undefined;
    for await (const event of stream) {
      switch (event.type) {
        case 'response.output_text.delta':
          onTextDelta(event.delta);
          break;
        case 'response.completed':
        case 'response.incomplete':
        case 'response.failed':
          final = event.response;
          break;
        default:
          break;
      }
    }
    if (!final) throw new ModelError('invalid_output', this.model, `Model ${this.model} ended its stream without a final response.`);
    return final;
  }

  #read(response: Response): ModelResponse {
    if (response.status === 'failed') {
      const code = response.error?.code;
      const failure = code === 'server_error' || code === 'rate_limit_exceeded' ? 'unreachable' : 'invalid_output';
      throw new ModelError(failure, this.model, `Model ${this.model} failed to answer: ${response.error?.message ?? 'no reason given'}`);
    }
    let text = '';
    const toolCalls: ModelToolCall[] = [];
    const hostedToolCalls: HostedToolCall[] = [];
    for (const item of response.output ?? []) {
      if (item.type === 'message') {
        for (const part of item.content) if (part.type === 'output_text') text += part.text;
      } else if (item.type === 'function_call') {
        // `call_id` pairs the result with the call; `id` is the item's own id and is not accepted in its place.
        toolCalls.push({ callId: item.call_id, name: item.name, arguments: item.arguments || '{}' });
      } else if (item.type === 'mcp_call') {
        hostedToolCalls.push({
          serverLabel: item.server_label,
          name: item.name,
          arguments: item.arguments,
          output: item.output ?? null,
          error: item.error ?? null,
        });
      }
    }
    return {
      model: this.model,
      text,
      toolCalls,
      ...(hostedToolCalls.length > 0 ? { hostedToolCalls } : {}),
      usage: responsesUsage(response.usage),
      responseId: response.id,
    };
  }
}

/** Provider-neutral items → Responses input items. */
export function toResponsesInput(input: readonly ModelInputItem[], images = true): ResponseInputItem[] {
  return input.map((item): ResponseInputItem => {
    switch (item.type) {
      case 'message': {
        const shown = images && item.role === 'user' ? (item.images ?? []).filter((image) => image.data !== undefined) : [];
        if (shown.length === 0) return { type: 'message', role: item.role, content: item.content };
        // A person's attached images go as `input_image` parts beside the text, inline as data URLs.
        return {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: item.content },
            ...shown.map((image) => ({ type: 'input_image' as const, image_url: `data:${image.mimeType};base64,${image.data}`, detail: 'auto' as const })),
          ],
        };
      }
      case 'tool_call':
        return { type: 'function_call', call_id: item.callId, name: item.name, arguments: item.arguments };
      case 'tool_result':
        return { type: 'function_call_output', call_id: item.callId, output: item.output };
    }
  });
}

function toFunctionTool(tool: ModelToolSpec): Tool {
  // strict: false — our schemas allow optional fields, which strict mode rejects.
  return { type: 'function', name: tool.name, description: tool.description, parameters: { ...tool.parameters }, strict: false };
}

function toMcpTool(spec: HostedMcpSpec): Tool {
  return {
    type: 'mcp',
    server_label: spec.serverLabel,
    server_url: spec.serverUrl,
    require_approval: spec.requireApproval,
    ...(spec.headers ? { headers: { ...spec.headers } } : {}),
    ...(spec.allowedTools ? { allowed_tools: [...spec.allowedTools] } : {}),
  };
}

/** Tokens of a response; cached input tokens (`input_tokens_details.cached_tokens`) are within the input tokens. */
function responsesUsage(usage: ResponseUsage | null | undefined): TokenUsage {
  const cached = usage?.input_tokens_details?.cached_tokens ?? 0;
  return { inputTokens: usage?.input_tokens ?? 0, outputTokens: usage?.output_tokens ?? 0, ...(cached > 0 ? { cachedInputTokens: cached } : {}) };
}
