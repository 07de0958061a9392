import type { ModelRequest, ModelResponse } from '../domain/ports/model-provider.js';
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

/**
 * Watches the model and tool calls of every turn, as they finish (`palaver dev`'s playground sets one). Palaver
 * composes no wrapper for it when none is set, so watching costs nothing unless asked for. A method must not throw
 * and must return at once: it runs on the turn's path.
 */
export interface CallObserver {
  modelCall?(call: ObservedModelCall): void;
  toolCall?(call: ObservedToolCall): void;
}

/** Reports each model call to `observer`, after it finished or failed; the call's outcome is passed on unchanged. */
export function observeModelCalls(observer: CallObserver): ModelWrapper {
  return async (invocation, next) => {
    const startedAt = new Date();
    const report = (outcome: { response: ModelResponse } | { error: string }) =>
      observer.modelCall?.({
        request: invocation.request,
        model: invocation.provider.model,
        path: invocation.path,
        startedAt,
        durationMs: Date.now() - startedAt.getTime(),
        ...outcome,
      });
    try {
      const response = await next(invocation);
      report({ response });
      return response;
    } catch (error) {
      report({ error: error instanceof Error ? error.message : String(error) });
      throw error;
    }
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
