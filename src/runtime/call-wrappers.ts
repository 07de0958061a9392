import { ModelError } from '../domain/errors.js';
import type { ModelProvider, ModelRequest, ModelResponse } from '../domain/ports/model-provider.js';
import type { ToolCallRequest, ToolCallResult } from '../domain/ports/tool-dispatch.js';
import type { Logger } from '../observability/logger.js';
import type { PalaverMetrics } from '../observability/metrics.js';

/**
 * Cross-cutting work around model and tool calls — concurrency limits, metrics, logs — as wrappers composed in one
 * place (`app.ts`), in the manner of grammY's API transformers: each wrapper gets the call and the next step.
 */
export type CallWrapper<Call, Result> = (call: Call, next: (call: Call) => Promise<Result>) => Promise<Result>;

/** Composes wrappers around `last`; the first wrapper is the outermost. */
export function composeCalls<Call, Result>(
  wrappers: readonly CallWrapper<Call, Result>[],
  last: (call: Call) => Promise<Result>,
): (call: Call) => Promise<Result> {
  return wrappers.reduceRight<(call: Call) => Promise<Result>>((next, wrapper) => (call) => wrapper(call, next), last);
}

/** One attempt on one model endpoint, as the model policy makes it. */
export interface ModelInvocation {
  readonly provider: ModelProvider;
  readonly request: ModelRequest;
  /** `direct`, `chain`, `chain_retry`, `fallback`, `no_tools`. */
  readonly path: string;
}

export type ModelInvoker = (invocation: ModelInvocation) => Promise<ModelResponse>;

/** One tool call on its way to the dispatcher. */
export interface ToolInvocation {
  readonly request: ToolCallRequest;
  readonly signal: AbortSignal | undefined;
}

export type ToolInvoker = (invocation: ToolInvocation) => Promise<ToolCallResult>;

/** Caps the model calls running at once across all conversations (`limits.maxConcurrentModelCalls`). */
export function limitModelCalls(limit: <T>(fn: () => Promise<T>) => Promise<T>): ModelWrapper {
  return (invocation, next) => limit(() => next(invocation));
}

/** Counts model calls, tokens and failures by path. */
export function countModelCalls(metrics: PalaverMetrics): ModelWrapper {
  return async (invocation, next) => {
    let response: ModelResponse;
    try {
      response = await next(invocation);
    } catch (error) {
      metrics.modelFailures.inc({ path: invocation.path });
      throw error;
    }
    metrics.modelCalls.inc({ model: response.model, path: invocation.path });
    const { inputTokens, outputTokens, cachedInputTokens } = response.usage;
    metrics.tokens.inc({ model: response.model, kind: 'input' }, inputTokens);
    metrics.tokens.inc({ model: response.model, kind: 'cached' }, Math.min(cachedInputTokens ?? 0, inputTokens));
    metrics.tokens.inc({ model: response.model, kind: 'output' }, outputTokens);
    return response;
  };
}

/**
 * Times each model call by its configured model and outcome: `ok`, or the failure of a `ModelError`
 * (`unreachable`, `refused`, …), else `error`. Composed inside the concurrency limit, so the wait for a slot is not
 * counted as the model's latency.
 */
export function timeModelCalls(metrics: PalaverMetrics): ModelWrapper {
  return async (invocation, next) => {
    const stop = metrics.modelCallSeconds.startTimer({ model: invocation.provider.model });
    try {
      const response = await next(invocation);
      stop({ outcome: 'ok' });
      return response;
    } catch (error) {
      stop({ outcome: error instanceof ModelError ? error.failure : 'error' });
      throw error;
    }
  };
}

/** Logs a failed model call with the turn's correlation id (the error's secrets are the logger's to redact). */
export function logModelFailures(logger: Logger): ModelWrapper {
  return async (invocation, next) => {
    try {
      return await next(invocation);
    } catch (error) {
      logger.warn(
        { err: error, path: invocation.path, model: invocation.provider.model, correlationId: invocation.request.correlationId },
        'model call failed',
      );
      throw error;
    }
  };
}

export type ModelWrapper = CallWrapper<ModelInvocation, ModelResponse>;
export type ToolWrapper = CallWrapper<ToolInvocation, ToolCallResult>;

/**
 * Counts and times tool calls by tool and outcome: `ok`, `error` (the tool answered with an error, which goes back to
 * the model), `failed` (the dispatcher could not run it).
 */
export function countToolCalls(metrics: PalaverMetrics): ToolWrapper {
  return async (call, next) => {
    const stop = metrics.toolCallSeconds.startTimer({ tool: call.request.tool });
    let result: ToolCallResult;
    try {
      result = await next(call);
    } catch (error) {
      stop({ outcome: 'failed' });
      throw error;
    }
    const outcome = result.isError ? 'error' : 'ok';
    stop({ outcome });
    metrics.toolCalls.inc({ tool: call.request.tool, outcome });
    return result;
  };
}

/** Logs every tool call at debug level and a dispatcher that could not run it at error level. */
export function logToolCalls(logger: Logger): ToolWrapper {
  return async (call, next) => {
    const { request } = call;
    try {
      const result = await next(call);
      logger.debug(
        { correlationId: request.correlationId, tool: request.tool, callId: request.callId, isError: result.isError, ms: result.durationMs },
        'tool call',
      );
      return result;
    } catch (error) {
      logger.error({ err: error, correlationId: request.correlationId, tool: request.tool, callId: request.callId }, 'tool dispatch failed');
      throw error;
    }
  };
}
