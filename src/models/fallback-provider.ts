import { ModelError, type ModelFailure } from '../domain/errors.js';
import type { ModelCapabilities, ModelProvider, ModelRequest, ModelResponse } from '../domain/ports/model-provider.js';

export interface FallbackProviderOptions {
  /** Called with the primary's error just before the fallback is tried (log it, count it). */
  readonly onFallback?: (error: ModelError) => void;
}

/** Failures after which another model may do better. `stale_chain` is not one: the caller resends without the chain. */
const FALLBACK_ON: ReadonlySet<ModelFailure> = new Set(['unreachable', 'refused', 'invalid_output']);

/**
 * Tries `primary`; when it fails with `unreachable`, `refused` or `invalid_output` (after its own retries), asks
 * `fallback` the same request and marks the answer `fallback: true` with the fallback's model name.
 *
 * The fallback gets the request without `previousResponseId` / `hostedMcp` when it lacks those capabilities. Note
 * that a chained request holds only the new items, so a fallback that cannot chain sees just those; callers that
 * chain should treat a response with `fallback: true` and no `responseId` as the end of the chain.
 *
 * Rejects with the primary's error when the failure is not one to fall back on (or the caller aborted), and with
 * the fallback's error, its `cause` the primary's, when both fail.
 */
export class FallbackProvider implements ModelProvider {
  readonly kind: string;
  readonly model: string;
  /** The primary's: it serves every call that succeeds the normal way. */
  readonly capabilities: ModelCapabilities;

  constructor(
    readonly primary: ModelProvider,
    readonly fallback: ModelProvider,
    private readonly options: FallbackProviderOptions = {},
  ) {
    this.kind = `fallback(${primary.kind})`;
    this.model = primary.model;
    this.capabilities = primary.capabilities;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    try {
      return await this.primary.complete(request);
    } catch (error) {
      if (!(error instanceof ModelError) || !FALLBACK_ON.has(error.failure) || request.signal?.aborted) throw error;
      this.options.onFallback?.(error);
      return this.#useFallback(request, error);
    }
  }

  async #useFallback(request: ModelRequest, primaryError: ModelError): Promise<ModelResponse> {
    const { previousResponseId, hostedMcp, ...rest } = request;
    const caps = this.fallback.capabilities;
    const fallbackRequest: ModelRequest = {
      ...rest,
      ...(previousResponseId && caps.responseChains ? { previousResponseId } : {}),
      ...(hostedMcp && caps.hostedMcp ? { hostedMcp } : {}),
    };
    try {
      const response = await this.fallback.complete(fallbackRequest);
      return { ...response, model: this.fallback.model, fallback: true };
    } catch (error) {
      if (!(error instanceof ModelError)) throw error;
      throw new ModelError(
        error.failure,
        error.model,
        `${error.message} (tried after the primary model ${primaryError.model} failed: ${primaryError.message})`,
        { status: error.status, cause: primaryError },
      );
    }
  }
}
