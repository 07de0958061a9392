import { describe, expect, it } from 'vitest';
import type { TurnProgress } from '../../src/domain/ports/channel.js';
import type { Flow, FlowContext, FlowRequest, FlowState, ModelCall } from '../../src/domain/ports/flow.js';
import type { ModelRequest, ModelResponse, ModelToolCall } from '../../src/domain/ports/model-provider.js';
import type { ToolCallResult } from '../../src/domain/ports/tool-dispatch.js';

/** A model step of a script: what the model answers to the nth call. */
export type Step = Partial<ModelResponse> & { readonly deltas?: readonly string[] };

/**
 * How a flow's model answers, in its own terms: the contract says "the model answers X" or "the model calls these
 * tools, then answers X", and each flow turns that into the model calls it makes (one call, or a call per stage).
 */
export interface FlowScript {
  /** The steps of a turn whose answer is `text`, streamed (when the channel streams) as `deltas` of it. */
  answer(text: string, deltas?: readonly string[]): Step[];
  /** The steps of a turn in which the model calls `calls` in one round and then answers `text`. */
  toolsThenAnswer(calls: readonly ModelToolCall[], text: string): Step[];
}

/** A flow that asks the model once per round and shows its text as it is: the single flow. */
export const plainScript: FlowScript = {
  answer: (text, deltas) => [{ text, ...(deltas ? { deltas } : {}) }],
  toolsThenAnswer: (calls, text) => [{ toolCalls: [...calls] }, { text }],
};

/** Gives every step its own token usage, so the records can be matched call by call. */
function withUsage(steps: readonly Step[]): Step[] {
  return steps.map((step, index) => ({ ...step, usage: { inputTokens: 100 + index * 50, outputTokens: 7 + index } }));
}

interface Recorded {
  readonly requests: ModelRequest[];
  readonly tools: { call: ModelToolCall; role: string | null; state: FlowState }[];
  readonly progress: TurnProgress[];
  readonly instructionRoles: (string | null)[];
}

/** A FlowContext that answers from a script and records what the flow asked for; it has no store to write to. */
function scriptedContext(
  steps: readonly Step[],
  options: { streaming?: boolean; tool?: (call: ModelToolCall) => Partial<ToolCallResult> } = {},
): { context: FlowContext; recorded: Recorded } {
  const recorded: Recorded = { requests: [], tools: [], progress: [], instructionRoles: [] };
  const context: FlowContext = {
    settings: { defaultRole: null, maxToolRounds: 4, maxToolCallsPerTurn: 8, maxCallsPerTool: 4, responseChains: false },
    log: { info: () => {}, warn: () => {} },
    now: () => new Date('2026-01-01T10:00:00Z'),
    instructions: (role) => {
      recorded.instructionRoles.push(role);
      return `instructions for ${role ?? 'nobody'}`;
    },
    toolsFor: async (role) => [{ name: 'lookup', description: `lookup for ${role}`, parameters: { type: 'object', properties: {} } }],
    hostedMcpFor: () => [],
    roleFromHostedCalls: () => undefined,
    waitsForApproval: () => false,
    decided: () => false,
    async callModel(request): Promise<ModelCall> {
      const step = steps[recorded.requests.length] ?? { text: 'out of script' };
      recorded.requests.push(request);
      for (const delta of step.deltas ?? []) request.onTextDelta?.(delta);
      const usage = step.usage ?? { inputTokens: 10, outputTokens: 2 };
      const response: ModelResponse = { model: 'scripted', text: step.text ?? '', toolCalls: step.toolCalls ?? [], usage };
      return { response, record: { model: 'scripted', usage, fallback: false, responseId: undefined, path: 'direct' } };
    },
    async runTool(call, role, state) {
      recorded.tools.push({ call, role, state });
      return { callId: call.callId, content: `result of ${call.name}`, isError: false, effects: {}, durationMs: 1, ...options.tool?.(call) };
    },
    progress: (event) => recorded.progress.push(event),
    limitReached: () => {},
    streaming: options.streaming ?? false,
    replyMessageId: 'reply-1',
  };
  return { context, recorded };
}

const request: FlowRequest = {
  user: { id: 'u1', displayName: 'Ada', phone: null, createdAt: new Date(0) },
  session: {
    id: 's1',
    userId: 'u1',
    channel: 'test',
    conversationId: 'c1',
    status: 'running',
    title: null,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    cost: '0',
    currency: 'USD',
    pausedAt: null,
    endedAt: null,
    assignedTo: null,
    assignedAt: null,
    createdAt: new Date(0),
    updatedAt: new Date(0),
  },
  correlationId: 'corr-1',
  language: 'en',
  timeZone: 'UTC',
  history: [
    { type: 'message', role: 'user', content: 'earlier' },
    { type: 'message', role: 'assistant', content: 'earlier answer' },
  ],
  newItems: [{ type: 'message', role: 'user', content: 'now' }],
  state: { role: null, responseChainId: null, recentToolCalls: [], flows: { cart: { items: 1 } } },
};

const toolCall = (callId: string, args = '{}'): ModelToolCall => ({ callId, name: 'lookup', arguments: args });

/**
 * The contract every `Flow` keeps: it answers through its context alone (models, tools, instructions, progress),
 * and returns a neutral result whose records account for everything it did. `script` says how the flow's model
 * answers (default: one call per round, as the single flow asks).
 */
export function flowContract(name: string, flow: Flow, script: FlowScript = plainScript): void {
  describe(`Flow contract: ${name}`, () => {
    it("answers with the model's text, having shown it the history and the new messages", async () => {
      const { context, recorded } = scriptedContext(script.answer('Hello Ada'));
      const result = await flow.run(request, context);
      expect(result.text).toBe('Hello Ada');
      expect(recorded.requests[0]!.input).toEqual([...request.history, ...request.newItems]);
    });

    it('accounts for every model call and its tokens', async () => {
      const steps = withUsage(script.toolsThenAnswer([toolCall('a')], 'done'));
      const { context, recorded } = scriptedContext(steps);
      const result = await flow.run(request, context);
      expect(recorded.requests).toHaveLength(steps.length);
      expect(result.modelCalls.map((call) => call.usage)).toEqual(steps.map((step) => step.usage));
    });

    it("runs tools only through the context, under the user's role, and keeps one audit record per call", async () => {
      const { context, recorded } = scriptedContext(script.toolsThenAnswer([toolCall('a', '{"q":1}'), toolCall('b')], 'found it'));
      const result = await flow.run(request, context);
      expect(recorded.tools.map((entry) => entry.call.callId)).toEqual(['a', 'b']);
      expect(recorded.tools.map((entry) => entry.role)).toEqual([null, null]);
      expect(result.audit.every((record) => record.audience === 'audit')).toBe(true);
      const toolRecords = result.audit.filter((record) => record.role === 'tool');
      expect(toolRecords).toHaveLength(2);
      expect(toolRecords[0]).toMatchObject({ content: 'result of lookup', toolCallId: 'a' });
      // Tool traffic stays out of what the person is shown.
      expect(result.text).toBe('found it');
      expect(result.state.recentToolCalls.map((call) => call.name)).toEqual(['lookup', 'lookup']);
    });

    it('applies flow-state effects a tool sends back', async () => {
      const { context } = scriptedContext(script.toolsThenAnswer([toolCall('a')], 'ok'), {
        tool: () => ({ effects: { flowState: { cart: null, wizard: { step: 2 } } } }),
      });
      const result = await flow.run(request, context);
      expect(result.state.flows).toEqual({ wizard: { step: 2 } });
    });

    it("answers under a role a tool asked for, with that role's instructions", async () => {
      const { context, recorded } = scriptedContext(script.toolsThenAnswer([toolCall('a')], 'as courier'), { tool: () => ({ effects: { role: 'courier' } }) });
      const result = await flow.run(request, context);
      expect(result.state.role).toBe('courier');
      expect(result.state.responseChainId).toBeNull();
      expect(recorded.instructionRoles.at(-1)).toBe('courier');
      // The call that wrote the answer was given the courier's instructions.
      expect(recorded.requests.at(-1)!.instructions).toContain('instructions for courier');
      expect(result.text).toBe('as courier');
    });

    it('stops after the round in which a tool hands the conversation to a person: no further model call, the handoff in its result', async () => {
      const steps = script.toolsThenAnswer([toolCall('a'), toolCall('b')], 'never written');
      const { context, recorded } = scriptedContext(steps, {
        tool: (call) => (call.callId === 'a' ? { effects: { handoff: { reason: 'wants a person', source: 'model' } } } : {}),
      });
      const result = await flow.run(request, context);
      expect(result.handoff).toEqual({ reason: 'wants a person', source: 'model' });
      // The rest of the round still ran (its calls were made together), and is accounted for.
      expect(recorded.tools.map((entry) => entry.call.callId)).toEqual(['a', 'b']);
      expect(result.audit.filter((record) => record.role === 'tool')).toHaveLength(2);
      const toolRound = steps.findIndex((step) => (step.toolCalls?.length ?? 0) > 0);
      expect(recorded.requests).toHaveLength(toolRound + 1);
      expect(result.modelCalls).toHaveLength(toolRound + 1);
      expect(result.text).not.toContain('never written');
    });

    it('streams text to the channel only when it streams', async () => {
      const quiet = scriptedContext(script.answer('Hi there', ['Hi ', 'there']));
      await flow.run(request, quiet.context);
      expect(quiet.recorded.progress).toEqual([]);
      const live = scriptedContext(script.answer('Hi there', ['Hi ', 'there']), { streaming: true });
      await flow.run(request, live.context);
      expect(
        live.recorded.progress
          .filter((event) => event.type === 'text_delta')
          .map((event) => (event as { delta: string }).delta)
          .join(''),
      ).toBe('Hi there');
    });
  });
}
