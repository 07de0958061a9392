import type { TokenUsage } from '../model.js';

/** A JSON Schema object (draft 2020-12 subset that OpenAI function tools accept). */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** A tool as the model sees it. */
export interface ModelToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
}

/**
 * A hosted MCP server handed to the Responses API as a `type: "mcp"` tool; the provider, not Palaver,
 * calls it. Only providers with `capabilities.hostedMcp` accept these.
 */
export interface HostedMcpSpec {
  readonly serverLabel: string;
  readonly serverUrl: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly allowedTools?: readonly string[];
  readonly requireApproval: 'never' | 'always';
}

/**
 * An image a person attached, shown to the model with their message. `data` (base64) is filled in by the runtime just
 * before the model call; an image without it is left out (its name is in the message's text either way). A provider
 * whose model takes no images (`model.images: false`) leaves them all out.
 */
export interface ModelImage {
  readonly attachmentId: string;
  readonly mimeType: string;
  readonly data?: string;
}

/** Provider-neutral conversation items, in order. */
export type ModelInputItem =
  | {
      readonly type: 'message';
      readonly role: 'user' | 'assistant' | 'system';
      readonly content: string;
      /** A user message's attached images. */
      readonly images?: readonly ModelImage[];
    }
  | { readonly type: 'tool_call'; readonly callId: string; readonly name: string; readonly arguments: string }
  | { readonly type: 'tool_result'; readonly callId: string; readonly output: string };

/**
 * Structured output: the model must answer with JSON matching `schema` (OpenAI's strict JSON-schema mode: every
 * property required, no additional properties). The caller still validates what comes back.
 */
export interface StructuredOutputSpec {
  /** Schema name sent to the model (letters, digits, `_`, `-`). */
  readonly name: string;
  readonly schema: JsonSchema;
}

export interface ModelRequest {
  /** System / developer instructions for this call. */
  readonly instructions: string;
  readonly input: readonly ModelInputItem[];
  readonly tools: readonly ModelToolSpec[];
  readonly hostedMcp?: readonly HostedMcpSpec[];
  /** Responses API only: continue this chain; `input` then holds only the new items. */
  readonly previousResponseId?: string;
  /** Responses API only: whether the provider should keep the response for chaining (default true). */
  readonly store?: boolean;
  /** Answer with JSON matching this schema instead of free text (tool calls stay possible). */
  readonly output?: StructuredOutputSpec;
  /** Called with each text fragment as it streams; when absent the provider may not stream. */
  readonly onTextDelta?: (delta: string) => void;
  readonly signal?: AbortSignal;
  /** Sent as `x-correlation-id` so the model gateway's logs line up with ours. */
  readonly correlationId?: string;
}

export interface ModelToolCall {
  readonly callId: string;
  readonly name: string;
  /** JSON text exactly as the model wrote it; parsing and validation happen in the tools layer. */
  readonly arguments: string;
}

/** An MCP call the provider made itself (hosted MCP), read back from the response output. */
export interface HostedToolCall {
  readonly serverLabel: string;
  readonly name: string;
  readonly arguments: string;
  readonly output: string | null;
  readonly error: string | null;
}

export interface ModelResponse {
  /** The model that actually answered (the fallback's name when it was used). */
  readonly model: string;
  readonly text: string;
  readonly toolCalls: readonly ModelToolCall[];
  readonly hostedToolCalls?: readonly HostedToolCall[];
  readonly usage: TokenUsage;
  /** Responses API id, usable as the next `previousResponseId`. */
  readonly responseId?: string;
  /** True when a fallback model produced this response. */
  readonly fallback?: boolean;
}

export interface ModelCapabilities {
  /** Supports `previousResponseId` chains (Responses API). */
  readonly responseChains: boolean;
  /** Accepts `hostedMcp` tools (Responses API). */
  readonly hostedMcp: boolean;
}

/**
 * One model endpoint. `complete` performs a single model call (never a tool loop) with its own timeout and
 * bounded retries, and rejects with a `ModelError` whose `failure` tells the caller what to do next.
 */
export interface ModelProvider {
  /** `openai-chat`, `openai-responses`, or a wrapper name such as `fallback(openai-chat)`. */
  readonly kind: string;
  /** The configured model name. */
  readonly model: string;
  readonly capabilities: ModelCapabilities;
  /** The most tokens one call may write (sent to the endpoint); undefined: the endpoint's own limit. */
  readonly maxOutputTokens?: number;
  complete(request: ModelRequest): Promise<ModelResponse>;
}

/**
 * The models of an agent: the primary and an optional fallback. What happens when the primary fails is the
 * runtime's model policy (`runtime/model-policy.ts`), not a provider's.
 */
export interface ModelSet {
  readonly primary: ModelProvider;
  readonly fallback?: ModelProvider;
}
