import type { ModelInputItem, ModelProvider, ModelRequest, ModelSet } from '../domain/ports/model-provider.js';
import type { ModelCall } from '../domain/ports/flow.js';
import { ModelError } from '../domain/errors.js';
import { BudgetExceeded } from './budget.js';
import type { ModelInvoker } from './call-wrappers.js';

export type { ModelSet };

export interface ModelPolicyOptions {
  readonly models: ModelSet;
  /** Makes one attempt on one endpoint, through the call wrappers (concurrency limit, metrics, logs). */
  readonly invoke: ModelInvoker;
  /** Whether this turn offers the model any tools. */
  readonly toolsAvailable: boolean;
  readonly onFailure?: (error: unknown, path: string) => void;
}

/**
 * How one model call is made, and what happens when it fails.
 *
 * Chat Completions: the primary; when it fails (after its own retries), the fallback with the same tools.
 *
 * Responses API: a chained call (`previous_response_id`) that fails is retried once without the chain, sending
 * the full transcript. If that fails too — or when the turn has no tools at all — the fallback answers without
 * tools and without storing a response, and the chain is cleared (its response carries no id).
 */
export function createModelCaller(options: ModelPolicyOptions) {
  const { primary, fallback } = options.models;
  const responsesMode = primary.capabilities.responseChains;

  const call = async (provider: ModelProvider, request: ModelRequest, path: string): Promise<ModelCall> => {
    const response = await options.invoke({ provider, request, path });
    const isFallback = provider !== primary || response.fallback === true;
    return {
      response,
      record: { model: response.model, usage: response.usage, fallback: isFallback, responseId: response.responseId, path },
    };
  };

  const withoutTools = (request: ModelRequest, transcript: readonly ModelInputItem[]): ModelRequest => {
    const { previousResponseId: _chain, hostedMcp: _hosted, ...rest } = request;
    return { ...rest, input: transcript, tools: [], store: false };
  };

  return async function callModel(request: ModelRequest, transcript: readonly ModelInputItem[]) {
    if (responsesMode && !options.toolsAvailable) {
      return call(fallback ?? primary, withoutTools(request, transcript), 'no_tools');
    }
    try {
      return await call(primary, request, request.previousResponseId ? 'chain' : 'direct');
    } catch (error) {
      // A call the budget refused was not made: no other model is asked instead.
      if (error instanceof BudgetExceeded) throw error;
      options.onFailure?.(error, request.previousResponseId ? 'chain' : 'direct');
      // The person went away: trying other models would only spend tokens nobody reads.
      if (request.signal?.aborted) throw error;
      let lastError = error;
      if (responsesMode && request.previousResponseId) {
        const { previousResponseId: _stale, ...unchained } = request;
        try {
          return await call(primary, { ...unchained, input: transcript }, 'chain_retry');
        } catch (retryError) {
          if (retryError instanceof BudgetExceeded) throw retryError;
          options.onFailure?.(retryError, 'chain_retry');
          lastError = retryError;
        }
      }
      if (!fallback) throw lastError;
      const fallbackRequest = responsesMode || !fallback.capabilities.responseChains ? toFallbackRequest(request, transcript, responsesMode) : request;
      try {
        return await call(fallback, fallbackRequest, 'fallback');
      } catch (fallbackError) {
        throw fallbackError instanceof ModelError
          ? new ModelError(fallbackError.failure, fallbackError.model, `${fallbackError.message} (after the primary model failed too)`, { cause: lastError })
          : fallbackError;
      }
    }
  };
}

function toFallbackRequest(request: ModelRequest, transcript: readonly ModelInputItem[], responsesMode: boolean): ModelRequest {
  const { previousResponseId: _chain, hostedMcp: _hosted, ...rest } = request;
  // Responses mode: the fallback answers without tools and stores nothing (see the policy above).
  return responsesMode ? { ...rest, input: transcript, tools: [], store: false } : { ...rest, input: transcript };
}
