import type { Flow, FlowContext, FlowRequest, FlowResult, FlowState, ModelCallRecord } from '../../domain/ports/flow.js';
import type { HostedToolCall, ModelToolCall } from '../../domain/ports/model-provider.js';
import type { HandoffEffect, ToolCallResult } from '../../domain/ports/tool-dispatch.js';
import { applyFlowStateEffects, rememberToolCalls } from '../context/user-state.js';
import { toolAuditRecords } from '../tools/tool-call.js';
import { runAgentLoop, type ExecutedToolCall } from './agent-loop.js';
import { withReplyFormat } from './reply-format.js';

/**
 * The single-agent flow: one agent loop under the user's role. When a tool changes the role, the loop stops after
 * that round and runs once more under the new role's instructions and tools, on a fresh chain (at most once). A
 * hosted MCP server's role tool is seen only in the response that reports its call, often beside the answer: that
 * answer, written under the old role, is dropped (and withdrawn from a streaming channel) and the turn re-runs the same way.
 * A handoff to a person (a tool's effect) stops the loop after its round, with no re-run and no further model call.
 */
export const singleFlow: Flow = {
  name: 'single',
  async run(request: FlowRequest, context: FlowContext): Promise<FlowResult> {
    const { settings } = context;
    const transcript = [...request.history, ...request.newItems];
    let state: FlowState = { ...request.state, role: request.state.role ?? settings.defaultRole };
    const modelCalls: ModelCallRecord[] = [];
    const toolCalls: ExecutedToolCall[] = [];
    const hostedToolCalls: HostedToolCall[] = [];
    const results = new Map<string, ToolCallResult>();
    // The first handoff a tool asks for ends the flow after its round; the turn answers with Palaver's notice.
    let handoff: HandoffEffect | undefined;
    const audit = () =>
      toolAuditRecords(
        toolCalls.map((call) => ({
          call,
          result: results.get(call.callId) ?? { callId: call.callId, ...call.result, effects: {}, durationMs: 0 },
          refused: call.refused,
        })),
        hostedToolCalls,
        request.correlationId,
      );

    for (let attempt = 0; ; attempt++) {
      const role = state.role;
      let newRole: string | undefined;
      const tools = await context.toolsFor(role);
      const hostedMcp = context.hostedMcpFor(role);
      // A chain is kept only by calls that had tools (see below); hosted MCP servers count, even without local tools.
      const chainId = settings.responseChains && (tools.length > 0 || hostedMcp.length > 0) ? state.responseChainId : null;
      let streamed = false;
      const runTool = async (call: ModelToolCall) => {
        const result = await context.runTool(call, role, state);
        results.set(call.callId, result);
        state = rememberToolCalls(applyFlowStateEffects(state, result.effects), [
          { name: call.name, arguments: call.arguments, ok: !result.isError, at: context.now().toISOString() },
        ]);
        if (result.effects.role !== undefined) newRole = result.effects.role;
        handoff ??= result.effects.handoff;
        return result;
      };
      const loop = await runAgentLoop({
        instructions: withReplyFormat(context.instructions(role, state), settings.replyFormat),
        transcript,
        newItems: request.newItems,
        previousResponseId: chainId ?? undefined,
        tools,
        hostedMcp,
        maxRounds: settings.maxToolRounds,
        maxToolCalls: settings.maxToolCallsPerTurn - toolCalls.length,
        maxCallsPerTool: settings.maxCallsPerTool,
        callModel: (modelRequest, soFar) => context.callModel(modelRequest, soFar),
        runTool,
        onHostedCalls: (calls) => {
          const hostedRole = context.roleFromHostedCalls(calls, role);
          if (hostedRole !== undefined) newRole = hostedRole;
        },
        shouldStop: () => handoff !== undefined || context.waitsForApproval() || (attempt === 0 && newRole !== undefined && newRole !== role),
        onLimit: (limit, tool) => context.limitReached(limit, tool),
        ...(settings.replyFormat ? { output: settings.replyFormat.output } : {}),
        ...(context.streaming
          ? {
              onTextDelta: (delta: string) => {
                streamed = true;
                context.progress({ type: 'text_delta', messageId: context.replyMessageId, delta });
              },
            }
          : {}),
        ...(request.signal ? { signal: request.signal } : {}),
        correlationId: request.correlationId,
      });
      modelCalls.push(...loop.modelCalls);
      toolCalls.push(...loop.toolCalls);
      hostedToolCalls.push(...loop.hostedToolCalls);
      state = rememberToolCalls(
        state,
        loop.hostedToolCalls.map((call) => ({
          name: `${call.serverLabel}.${call.name}`,
          arguments: call.arguments,
          ok: call.error === null,
          at: context.now().toISOString(),
        })),
      );

      if (handoff !== undefined) {
        // What the model wrote beside the call is not the reply: the person reads Palaver's notice instead.
        if (streamed) context.progress({ type: 'discard', messageId: context.replyMessageId });
        // The chain ends at a call whose result the model never reads.
        const role = newRole ?? state.role;
        return { text: '', audit: audit(), modelCalls, state: { ...state, role, responseChainId: null }, handoff };
      }

      // A call waits for someone's yes: the turn stores the question; the flow runs again from its journal after.
      if (context.waitsForApproval()) return { text: '', audit: audit(), modelCalls, state };

      if (newRole !== undefined && newRole !== role) {
        context.log.info({ from: role, to: newRole }, 'role changed by tool');
        // A new role starts a new chain: the old one carries the old role's instructions and tools.
        state = { ...state, role: newRole, responseChainId: null };
        // The first run ends here: stopped after its tool round, or answered beside a hosted role call.
        if (attempt === 0) {
          if (streamed) context.progress({ type: 'discard', messageId: context.replyMessageId });
          continue;
        }
      }

      const last = modelCalls[modelCalls.length - 1];
      // A chain continues only from a successful primary call that had tools; a fallback or tool-less answer clears it.
      const keepsChain = last !== undefined && !last.fallback && last.path !== 'no_tools' && loop.responseId !== undefined;
      return {
        text: loop.text,
        audit: audit(),
        modelCalls,
        state: { ...state, responseChainId: keepsChain ? loop.responseId! : null },
      };
    }
  },
};
