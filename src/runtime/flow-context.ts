import { ConfigError, ModelError } from '../domain/errors.js';
import type { FlowContext } from '../domain/ports/flow.js';
import { TurnBudget } from './budget.js';
import type { ModelInvoker } from './call-wrappers.js';
import { composeInstructions } from './context/instructions.js';
import { inputTokensAtMost } from './prompt-bound.js';
import { renderUserSection } from './context/user-context.js';
import { createModelCaller } from './model-policy.js';
import { replyPlanFormat } from './reply-plan/plan-format.js';
import { hostedMcpForRole, roleFromHostedCalls } from './tools/hosted-role-policy.js';
import { withHandoffTool } from './tools/handoff-tool.js';
import { runToolCall } from './tools/tool-call.js';
import type { TurnScope } from './turn/turn-context.js';

/** Failed model attempts of a turn (path and reason), recorded beside the calls that answered. */
export type ModelFailures = { path: string; failure: string }[];

/**
 * What the turn lends its flow: model calls under the model policy, tools under the role policy, instructions with
 * the runtime facts, progress to the channel. Every model call is recorded in the turn's journal as it completes,
 * so a turn that fails half-way still knows what it spent, and one resumed after a crash replays it.
 */
export function createFlowContext(scope: TurnScope, failures: ModelFailures): FlowContext {
  const { deps, journal } = scope;
  const budget = deps.budgets === undefined ? undefined : new TurnBudget(scope, deps.budgets);
  const callerFor = (toolsAvailable: boolean, name: string | undefined, invoke: ModelInvoker) => {
    const models = name === undefined ? deps.models : deps.namedModels?.get(name);
    if (models === undefined)
      throw new ConfigError(`The flow asked for model set "${name}", which is not configured`, [{ path: 'staged.types', message: `no model set ${name}` }]);
    return createModelCaller({
      models,
      invoke,
      toolsAvailable,
      onFailure: (error, path) => {
        failures.push({ path, failure: error instanceof ModelError ? error.failure : 'error' });
        // Text streamed by the attempt that failed will not be the reply: the person must not keep reading it.
        if (scope.journal.streamedText !== '') scope.progress({ type: 'discard', messageId: scope.replyMessageId });
      },
    });
  };
  // The person's section is the same text all turn long: rendered once, put first by every flow's instructions.
  const userSection = renderUserSection(scope.userContext);
  // Replies as actions: the final answer is a plan (JSON), checked by the turn; nothing of it is streamed as text.
  const replyFormat = scope.replyMode === 'actions' ? replyPlanFormat(scope) : undefined;

  return {
    settings: {
      defaultRole: deps.agent.defaultRole,
      maxToolRounds: deps.agent.maxToolRounds,
      maxToolCallsPerTurn: deps.agent.maxToolCallsPerTurn,
      maxCallsPerTool: deps.agent.maxCallsPerTool,
      responseChains: deps.models.primary.capabilities.responseChains,
      ...(replyFormat ? { replyFormat } : {}),
    },
    get log() {
      return scope.log;
    },
    now: deps.now,
    instructions: (role, state) => composeInstructions(deps.instructions, role, { timeZone: scope.timeZone, now: deps.now() }, state, userSection),
    toolsFor: async (role) => {
      const { specs } = await deps.tools.toolsFor(role, (host, error) => scope.log.warn({ host, err: error }, 'tool host unavailable'));
      // The built-in handoff is offered in every role, and in place of a host's tool of the same name.
      return deps.agent.handoff?.tool === true ? withHandoffTool(specs) : specs;
    },
    async callModel(request, transcript, choice) {
      // A resumed turn gets the calls it made before the crash back from its journal: the model is not asked (nor
      // paid) again, and nothing is streamed (the person saw that text, or it was discarded, before the crash).
      const { seq, recorded } = journal.nextModelCall(choice?.models);
      if (recorded) return recorded;
      // The turn goes on: the call before this one is kept, so a crash from here on does not ask it again.
      await journal.flush();
      const toolsAvailable = request.tools.length > 0 || (request.hostedMcp?.length ?? 0) > 0;
      // Under a budget every attempt (primary, chain retry, fallback) first reserves what it can cost. A chained
      // request sends only the new items; the chain's earlier ones, which the provider adds, cost too. The claims of
      // the attempts go once the call is in the journal, whose spend the next reservation counts.
      const claims: (() => void)[] = [];
      const chainTokens = request.previousResponseId === undefined ? 0 : inputTokensAtMost(transcript);
      const invoke: ModelInvoker =
        budget === undefined
          ? deps.invokeModel
          : async (invocation) => {
              claims.push(await budget.beforeCall(invocation, invocation.request.previousResponseId === undefined ? 0 : chainTokens));
              return deps.invokeModel(invocation);
            };
      try {
        const call = await callerFor(toolsAvailable, choice?.models, invoke)(request, transcript);
        await journal.recordModelCall(seq, choice?.models, call);
        return call;
      } finally {
        for (const release of claims) release();
      }
    },
    hostedMcpFor: (role) => hostedMcpForRole(deps.hostedMcp, deps.tools.allowedFor(role)),
    roleFromHostedCalls: (calls, role) =>
      roleFromHostedCalls(calls, {
        setRoleTool: deps.agent.setRoleTool,
        roleArgument: deps.agent.roleArgument,
        offered: hostedMcpForRole(deps.hostedMcp, deps.tools.allowedFor(role)),
        mayGrantRole: (tool, requested) => deps.tools.mayGrantRole(tool, requested),
        onRefused: (call, reason) =>
          scope.log.warn({ serverLabel: call.serverLabel, tool: call.name, reason }, 'hosted MCP call asked for a role change that is not allowed; ignored'),
      }),
    runTool: (call, role, state) => runToolCall(scope, call, role, state),
    waitsForApproval: () => scope.journal.asking !== undefined,
    decided: (callId) => (scope.journal.approvalOf(callId)?.status ?? 'pending') !== 'pending',
    progress: (event) => scope.progress(event),
    limitReached: (limit, tool) => {
      deps.metrics.toolLimits.inc({ limit });
      scope.log.warn({ limit, tool }, 'tool limit reached');
    },
    streaming: scope.channel.capabilities.streaming && replyFormat === undefined,
    replyMessageId: scope.replyMessageId,
  };
}
