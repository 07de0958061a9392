import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ModelEndpointConfig } from '../config/schema.js';
import { ModelError } from '../domain/errors.js';
import { withAnswerDeadline } from './answer-deadline.js';
import { DEFAULT_OPENAI_BASE_URL } from './api-key-policy.js';

export { DEFAULT_OPENAI_BASE_URL };

/**
 * Client options for an endpoint without a key (a local server: Ollama, vLLM, llama.cpp). The SDK refuses to build a
 * client without a key, so it gets one that never leaves the process: a `null` Authorization header is the SDK's
 * documented way to send none. A server is never sent a made-up key. (Which endpoints may go without a key is
 * `requireModelKeys`' decision, at start.)
 */
export function keyOptions(apiKey: string | undefined): { apiKey: string; defaultHeaders?: Record<string, null> } {
  return apiKey === undefined ? { apiKey: 'no-key-configured', defaultHeaders: { Authorization: null } } : { apiKey };
}

/** What the caller may inject when a provider builds its own client. */
export interface OpenAIClientOptions {
  /** Headers sent on every request (e.g. an `OpenAI-Organization` or a gateway tag). */
  readonly defaultHeaders?: Readonly<Record<string, string>>;
  /** The `fetch` calls go out with: Palaver passes its own (`src/platform/outgoing-http.ts`). Default: the global `fetch`. */
  readonly fetch?: typeof fetch;
}

/**
 * Builds the SDK client for one endpoint. Timeout and retries come from the config: the SDK retries 408, 409, 429,
 * 5xx and connection errors `maxRetries` times with backoff (honouring `retry-after(-ms)`), which is our bounded retry.
 *
 * Every option the SDK would otherwise read from `process.env` (`OPENAI_BASE_URL`, `OPENAI_ORG_ID`, …) is set
 * explicitly, so config stays the only source of truth. Requests go out with the caller's `fetch` (Palaver's is
 * undici's on its keep-alive or proxy agent: see `src/platform/outgoing-http.ts`), bounded by `timeoutMs` until
 * the whole answer is read (`answer-deadline.ts`).
 */
export function createOpenAIClient(config: ModelEndpointConfig, options: OpenAIClientOptions = {}): OpenAI {
  const keys = keyOptions(config.apiKey);
  return new OpenAI({
    baseURL: config.baseUrl ?? DEFAULT_OPENAI_BASE_URL,
    apiKey: keys.apiKey,
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    timeout: config.timeoutMs,
    maxRetries: config.maxRetries,
    defaultHeaders: { ...options.defaultHeaders, ...keys.defaultHeaders },
    fetch: withAnswerDeadline(options.fetch ?? globalThis.fetch, config.timeoutMs),
  });
}

/** Per-request SDK options: the caller's abort signal and the correlation header. */
export function requestOptions(request: { signal?: AbortSignal; correlationId?: string }): OpenAI.RequestOptions {
  return {
    ...(request.signal ? { signal: request.signal } : {}),
    ...(request.correlationId ? { headers: { 'x-correlation-id': request.correlationId } } : {}),
  };
}

/** True when a 400/404 says the `previous_response_id` is unknown (expired, deleted or never stored). */
export function isStaleChainError(error: unknown): boolean {
  if (!(error instanceof APIError) || (error.status !== 400 && error.status !== 404)) return false;
  return error.code === 'previous_response_not_found' || /previous[ _]response/i.test(error.message);
}

/**
 * Maps anything the SDK throws to a `ModelError`:
 * connection errors, timeouts, 5xx and 429 → `unreachable`; a stale `previous_response_id` → `stale_chain`;
 * other 4xx → `refused`. An error that is already a `ModelError` passes through.
 *
 * `secret` (the API key) is scrubbed from the message: some servers echo the key back ("Incorrect API key
 * provided: sk-…").
 */
export function toModelError(error: unknown, model: string, secret?: string): ModelError {
  if (error instanceof ModelError) return error;
  const scrub = (text: string): string => (secret ? text.split(secret).join('[redacted]') : text);

  if (error instanceof APIUserAbortError) {
    return new ModelError('unreachable', model, `Model ${model}: the call was aborted by the caller.`, { cause: error });
  }
  // The second: the answer's body did not arrive within the timeout (see `withAnswerDeadline`).
  if (error instanceof APIConnectionTimeoutError || (error instanceof DOMException && error.name === 'TimeoutError')) {
    return new ModelError('unreachable', model, `Model ${model} did not answer in time; raise model.timeoutMs or check the endpoint's load.`, { cause: error });
  }
  if (error instanceof APIConnectionError) {
    return new ModelError(
      'unreachable',
      model,
      `Model ${model} could not be reached (${scrub(causeText(error))}); check model.baseUrl and that the server is running.`,
      { cause: error },
    );
  }
  if (error instanceof APIError) {
    const status: number | undefined = error.status;
    const detail = scrub(error.message);
    if (status === undefined || status >= 500 || status === 429) {
      return new ModelError('unreachable', model, `Model ${model} is unavailable: ${detail}`, { status, cause: error });
    }
    if (isStaleChainError(error)) {
      return new ModelError(
        'stale_chain',
        model,
        `Model ${model} no longer knows the previous response; resend the conversation without previousResponseId. (${detail})`,
        { status, cause: error },
      );
    }
    const hint = status === 401 || status === 403 ? ' Check model.apiKey.' : status === 404 ? ' Check model.name and model.baseUrl.' : '';
    return new ModelError('refused', model, `Model ${model} refused the request: ${detail}.${hint}`, { status, cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ModelError('invalid_output', model, `Model ${model} failed unexpectedly: ${scrub(message)}`, { cause: error });
}

/** The innermost cause's message: `fetch failed` says less than the `connect ECONNREFUSED 127.0.0.1:8080` under it. */
function causeText(error: Error): string {
  let text = error.message;
  let cause = error.cause;
  for (let depth = 0; cause instanceof Error && depth < 5; depth++, cause = cause.cause) {
    if (cause.message) text = cause.message;
  }
  return text;
}
