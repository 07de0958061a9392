import { handoffReason } from '../../domain/handoff-reason.js';
import type { ToolCallContext } from '../../domain/ports/tool-host.js';
import type { HandoffEffect, ToolCallRequest, ToolCallResult, ToolDispatcher } from '../../domain/ports/tool-dispatch.js';
import type { ToolRegistry } from './tool-registry.js';

/**
 * Runs tool calls in this process, on the registry's hosts. The tool sees a `ToolCallContext` built from the
 * request alone, and what it changes (role, flow state, a handoff to a person) is collected into the result's effects — exactly what a
 * worker in another process would send back — so the core never hands a tool a closure over its own state.
 */
export class InlineToolDispatcher implements ToolDispatcher {
  readonly #registry: ToolRegistry;

  constructor(registry: ToolRegistry) {
    this.#registry = registry;
  }

  async dispatch(request: ToolCallRequest, options: { readonly signal?: AbortSignal } = {}): Promise<ToolCallResult> {
    const started = performance.now();
    let role: string | undefined;
    let flowState: Record<string, unknown> | undefined;
    let handoff: HandoffEffect | undefined;
    let ownSignal: AbortSignal | undefined;
    const ctx: ToolCallContext = {
      userId: request.userId,
      accounts: request.accounts,
      sessionId: request.sessionId,
      conversationId: request.conversationId,
      correlationId: request.correlationId,
      callId: request.callId,
      idempotencyKey: request.idempotencyKey,
      // Without a turn signal, one of the call's own, so listeners a tool leaves behind go with the call; made only
      // for a tool that reads it (an AbortSignal is not cheap to make).
      get signal() {
        return options.signal ?? (ownSignal ??= new AbortController().signal);
      },
      role: request.role,
      setRole: (next) => (role = next),
      getFlowState: (namespace) => (flowState && namespace in flowState ? (flowState[namespace] ?? undefined) : request.flowState[namespace]),
      setFlowState: (namespace, value) => {
        flowState = { ...flowState, [namespace]: value === undefined ? null : value };
      },
      handoff: (asked) => {
        const reason = handoffReason((asked as { reason?: unknown } | undefined)?.reason);
        if (reason === undefined) throw new TypeError('ctx.handoff needs { reason: string }: a few words for the operators on why a person is needed');
        handoff = { reason, source: 'tool' };
      },
    };
    const result = await this.#registry.call(request.tool, request.arguments, ctx);
    return {
      callId: request.callId,
      content: result.content,
      ...(result.structured === undefined ? {} : { structured: result.structured }),
      isError: result.isError,
      effects: {
        ...(role === undefined ? {} : { role }),
        ...(flowState === undefined ? {} : { flowState }),
        ...(handoff === undefined ? {} : { handoff }),
      },
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
    };
  }

  async close(): Promise<void> {
    await this.#registry.close();
  }
}
