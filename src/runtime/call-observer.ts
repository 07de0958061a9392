import type { ModelRequest, ModelResponse } from '../domain/ports/model-provider.js';
import type { FocusRecord } from '../domain/ports/store.js';
import type { ToolCallRequest, ToolCallResult } from '../domain/ports/tool-dispatch.js';
import type { ModelWrapper, ToolWrapper } from './call-wrappers.js';

/** One model call as it was made: what the model was sent, what it answered (or how it failed), and how long it took. */
export interface ObservedModelCall {
  readonly request: ModelRequest;
  /** The configured model of the endpoint called. */
  readonly model: string;
  /** `direct`, `chain`, `chain_retry`, `fallback`, `no_tools`. */
  readonly path: string;
  readonly startedAt: Date;
  readonly durationMs: number;
  readonly response?: ModelResponse;
  /**
   * What the call costs in USD, exact (not rounded), priced as the turn bills it: `model.prices`, else the price
   * table; "0" for an unpriced model. Absent when the call failed or could not be priced.
   */
  readonly usdCost?: string;
  /** The failure's message when the call failed. */
  readonly error?: string;
}

/** One tool call as it was dispatched, with its result (or the dispatcher's failure). */
export interface ObservedToolCall {
  readonly request: ToolCallRequest;
  readonly startedAt: Date;
  readonly durationMs: number;
  readonly result?: ToolCallResult;
  readonly error?: string;
}

/** The entities in focus a turn loaded for its stage (docs/flows-and-focus.md), before its first model call. */
export interface ObservedFocus {
  readonly correlationId: string;
  readonly sessionId: string;
  /** The stage found and how (`keyword`, `last_tool`, `default`, `classifier`); absent when no stage matched. */
  readonly stage?: { readonly id: string; readonly by: string };
  /** Each needed type that was loaded (or still fresh), with its entities. */
  readonly entities: readonly FocusRecord[];
  /** Needed types whose loading tool failed: the turn went on without them. */
  readonly unavailable: readonly string[];
}

/**
 * Watches the model and tool calls of every turn, as they finish (`palaver dev`'s playground sets one). Palaver
 * composes no wrapper for it when none is set, so watching costs nothing unless asked for. A method must not throw
 * and must return at once: it runs on the turn's path.
 */
export interface CallObserver {
  modelCall?(call: ObservedModelCall): void;
  toolCall?(call: ObservedToolCall): void;
  /** The focus a turn loaded (agents with `focus.stages` only). */
  focus?(focus: ObservedFocus): void;
}

/** Prices a response as the turn bills it: its exact USD cost (Billing.usdCostOf). */
export type PriceResponse = (response: ModelResponse) => Promise<string>;

/**
 * Reports each model call to `observer`, after it finished or failed, priced with `price`; the call's outcome is
 * passed on unchanged.
 */
export function observeModelCalls(observer: CallObserver, price?: PriceResponse): ModelWrapper {
  return async (invocation, next) => {
    const startedAt = new Date();
    const report = (durationMs: number, outcome: { response: ModelResponse; usdCost?: string } | { error: string }) =>
      observer.modelCall?.({
        request: invocation.request,
        model: invocation.provider.model,
        path: invocation.path,
        startedAt,
        durationMs,
        ...outcome,
      });
    let response: ModelResponse;
    try {
      response = await next(invocation);
    } catch (error) {
      report(Date.now() - startedAt.getTime(), { error: error instanceof Error ? error.message : String(error) });
      throw error;
    }
    const durationMs = Date.now() - startedAt.getTime();
    // Only a watched Palaver prices here; a price that cannot be found leaves the cost out, never fails the call.
    const usdCost = price === undefined ? undefined : await price(response).catch(() => undefined);
    report(durationMs, usdCost === undefined ? { response } : { response, usdCost });
    return response;
  };
}

/** Reports each tool call to `observer`, after it returned or its dispatch failed. */
export function observeToolCalls(observer: CallObserver): ToolWrapper {
  return async (call, next) => {
    const startedAt = new Date();
    try {
      const result = await next(call);
      observer.toolCall?.({ request: call.request, startedAt, durationMs: Date.now() - startedAt.getTime(), result });
      return result;
    } catch (error) {
      observer.toolCall?.({
        request: call.request,
        startedAt,
        durationMs: Date.now() - startedAt.getTime(),
        error: error instanceof Error ? error.message : String(error),
      });
      throw error;
    }
  };
}
