import { z } from 'zod';
import type { NewMessage } from '../../domain/model.js';
import type { Flow, FlowContext, FlowRequest, FlowResult, FlowState, ModelCall, ModelCallRecord } from '../../domain/ports/flow.js';
import type { ModelToolCall } from '../../domain/ports/model-provider.js';
import type { HandoffEffect, ToolCallResult } from '../../domain/ports/tool-dispatch.js';
import { tokensOf } from '../billing.js';
import { applyFlowStateEffects, rememberToolCalls } from '../context/user-state.js';
import { toolAuditRecords } from '../tools/tool-call.js';
import { runAgentLoop } from './agent-loop.js';
import { JsonStringFieldStream } from './json-field-stream.js';
import { withReplyFormat } from './reply-format.js';
import { callForStructured, stageOutput, type StageOutput } from './structured-output.js';

/** The three stages, in order. */
export const STAGES = ['intent', 'execution', 'organization'] as const;
export type Stage = (typeof STAGES)[number];

/** What the intent stage decides: answer now, or hand a task to execution. */
export const intentOutput = stageOutput(
  'intent',
  z.strictObject({
    direct: z.boolean().describe('true when the person can be answered now, without tools or further work'),
    answer: z.string().nullable().describe('the answer for the person when direct is true, otherwise null'),
    intent: z.string().describe('what the person wants, in one sentence'),
    details: z.string().describe('everything the work needs from the conversation: names, dates, times, ids'),
  }),
);

/** What the execution stage did with the tools. */
export const executionOutput = stageOutput(
  'execution',
  z.strictObject({
    status: z.enum(['done', 'partly_done', 'not_possible', 'needs_information']),
    summary: z.string().describe('what was done or found, for the writer of the reply'),
    facts: z.array(z.string()).describe('facts the reply must state exactly: ids, dates, times, prices'),
  }),
);

/** The reply for the person, written by the organization stage. */
export const organizationOutput = stageOutput('organization', z.strictObject({ reply: z.string().min(1).describe('the message to send to the person') }));

export type IntentResult = z.infer<typeof intentOutput.schema>;
export type ExecutionResult = z.infer<typeof executionOutput.schema>;

/** The default text each stage adds to the agent's instructions. */
export const DEFAULT_STAGE_PROMPTS: Readonly<Record<Stage, string>> = {
  intent:
    'Stage: intent. Do not answer in prose. Decide what the person wants from the conversation. If it needs no tools and no ' +
    'lookup (a greeting, thanks, a question the conversation already answers), set direct to true and write the answer ' +
    "in the person's language. Otherwise set direct to false, answer to null, and describe the task.",
  execution:
    'Stage: execution. Carry out the task below with the tools you have, acting only for this person. Do not write to the ' +
    'person. When you are done, answer with JSON reporting what was done and the facts the reply must state.',
  organization:
    "Stage: organization. Write the reply to the person from what they asked for and the work report below, in the person's " +
    'language: short, friendly, exact about ids, dates and times. Never mention stages, tools or the report itself.',
};

export interface StagedFlowSettings {
  /** The model set (`FlowContext.callModel`'s `models`) of each stage. */
  readonly models: Readonly<Record<Stage, string>>;
  /** Text each stage adds to the instructions; defaults to {@link DEFAULT_STAGE_PROMPTS}. */
  readonly prompts?: Partial<Readonly<Record<Stage, string>>>;
}

/**
 * The staged flow: intent → execution → organization, each on its own model and each answering with JSON that its
 * schema checks (one repair, then a clean failure). Intent and execution are stored as audit records the person never
 * sees; only the organization's reply is shown and streamed. A direct answer from the intent stage skips the rest.
 * Execution runs the agent loop with the role's tools; a role a tool sets applies to the reply's instructions and,
 * for tools, from the next turn. A handoff to a person asked for in execution ends the flow after its round: no report
 * and no reply are written (the turn answers with Palaver's notice).
 */
export function createStagedFlow(settings: StagedFlowSettings): Flow {
  const prompts = { ...DEFAULT_STAGE_PROMPTS, ...settings.prompts };
  return {
    name: 'staged',
    async run(request: FlowRequest, context: FlowContext): Promise<FlowResult> {
      const transcript = [...request.history, ...request.newItems];
      let state: FlowState = { ...request.state, role: request.state.role ?? context.settings.defaultRole, responseChainId: null };
      const role = state.role;
      const instructions = context.instructions(role, state);
      const { replyFormat } = context.settings;
      const common = { correlationId: request.correlationId, ...(request.signal ? { signal: request.signal } : {}) };
      const modelCalls: ModelCallRecord[] = [];
      const audit: NewMessage[] = [];
      const recordsOf = (calls: readonly ModelCall[]) => calls.map((call) => call.record);
      const record = (calls: readonly ModelCall[]) => modelCalls.push(...recordsOf(calls));
      // A stage's record carries its own calls' tokens; the reply carries the turn's total, which is what is billed.
      const stageRecord = (stage: Stage, value: unknown, repaired: boolean, calls: readonly ModelCallRecord[]): NewMessage => ({
        role: 'assistant',
        audience: 'audit',
        content: JSON.stringify(value),
        correlationId: request.correlationId,
        ...(calls.length > 0 ? { model: calls[calls.length - 1]!.model } : {}),
        ...tokensOf(calls),
        meta: { stage, ...(repaired ? { repaired: true } : {}) },
      });

      // 1. Intent: answer now, or say what must be done.
      const intent = await callForStructured(
        context,
        'intent',
        intentOutput,
        { instructions: `${instructions}\n\n${prompts.intent}`, input: transcript, tools: [], ...common },
        { models: settings.models.intent },
      );
      record(intent.calls);
      audit.push(stageRecord('intent', intent.value, intent.repaired, recordsOf(intent.calls)));
      if (intent.value.direct && intent.value.answer?.trim()) {
        const answer = intent.value.answer.trim();
        // Replies as actions: the direct answer is a plan of one message (the turn checks it as any plan).
        if (replyFormat) return { text: JSON.stringify({ actions: [{ type: 'send_message', text: answer, reply_to: null }] }), audit, modelCalls, state };
        if (context.streaming) context.progress({ type: 'text_delta', messageId: context.replyMessageId, delta: answer });
        return { text: answer, audit, modelCalls, state };
      }

      // 2. Execution: the agent loop with the role's tools; its last answer is the work report.
      const results = new Map<string, ToolCallResult>();
      // The first handoff a tool asks for ends the flow after its round: no report, no reply written.
      let handoff: HandoffEffect | undefined;
      const runTool = async (call: ModelToolCall) => {
        const result = await context.runTool(call, role, state);
        results.set(call.callId, result);
        state = rememberToolCalls(applyFlowStateEffects(state, result.effects), [
          { name: call.name, arguments: call.arguments, ok: !result.isError, at: context.now().toISOString() },
        ]);
        if (result.effects.role !== undefined) state = { ...state, role: result.effects.role };
        handoff ??= result.effects.handoff;
        return result;
      };
      const task = JSON.stringify({ intent: intent.value.intent, details: intent.value.details });
      const executionInstructions = `${instructions}\n\n${prompts.execution}\n\nThe task:\n${task}`;
      const loop = await runAgentLoop({
        instructions: executionInstructions,
        transcript,
        newItems: request.newItems,
        previousResponseId: undefined,
        tools: await context.toolsFor(role),
        hostedMcp: context.hostedMcpFor(role),
        maxRounds: context.settings.maxToolRounds,
        maxToolCalls: context.settings.maxToolCallsPerTurn,
        maxCallsPerTool: context.settings.maxCallsPerTool,
        callModel: (modelRequest, soFar) => context.callModel(modelRequest, soFar, { models: settings.models.execution }),
        runTool,
        shouldStop: () => handoff !== undefined || context.waitsForApproval(),
        // A hosted role tool changes the role the reply is written under, as a local one does.
        onHostedCalls: (calls) => {
          const hostedRole = context.roleFromHostedCalls(calls, role);
          if (hostedRole !== undefined) state = { ...state, role: hostedRole };
        },
        onLimit: (limit, tool) => context.limitReached(limit, tool),
        output: executionOutput.spec,
        ...common,
      });
      modelCalls.push(...loop.modelCalls);
      const toolAudit = () =>
        toolAuditRecords(
          loop.toolCalls.map((call) => ({
            call,
            result: results.get(call.callId) ?? { callId: call.callId, ...call.result, effects: {}, durationMs: 0 },
            refused: call.refused,
          })),
          loop.hostedToolCalls,
          request.correlationId,
        );
      if (handoff !== undefined) {
        audit.push(...toolAudit(), stageRecord('execution', { handoff }, false, loop.modelCalls));
        return { text: '', audit, modelCalls, state, handoff };
      }
      // A call waits for someone's yes: the turn stores the question; the stages run again from its journal after.
      if (context.waitsForApproval()) return { text: '', audit, modelCalls, state };
      const execution = await callForStructured(
        context,
        'execution',
        executionOutput,
        { instructions: executionInstructions, input: loop.transcript, tools: [], ...common },
        { models: settings.models.execution },
        loop.text,
      );
      record(execution.calls);
      audit.push(...toolAudit(), stageRecord('execution', execution.value, execution.repaired, [...loop.modelCalls, ...recordsOf(execution.calls)]));

      // 3. Organization: the reply for the person, streamed as its `reply` field grows, from what the intent stage
      // understood as well as what execution did (a report of "not possible" reads differently against the request).
      // It is written under the role in force now: a tool that changed the role (a courier identified) changes who the
      // reply speaks to, as the single flow's re-run does; the new role's tools apply from the next turn.
      const replyInstructions = state.role === role ? instructions : context.instructions(state.role, state);
      const organizationInstructions = `${replyInstructions}\n\n${prompts.organization}\n\nWhat the person asked for (for you only):\n${task}\n\nThe work report (for you only):\n${JSON.stringify(execution.value)}`;
      if (replyFormat) {
        // Replies as actions: the stage answers with the plan, unchecked here (the turn checks it and asks for one repair).
        const plan = await context.callModel(
          { instructions: withReplyFormat(organizationInstructions, replyFormat), input: transcript, tools: [], output: replyFormat.output, ...common },
          transcript,
          { models: settings.models.organization },
        );
        record([plan]);
        return { text: plan.response.text, audit, modelCalls, state };
      }
      const stream = new JsonStringFieldStream('reply');
      let streamed = false;
      const onTextDelta = (delta: string) => {
        const text = stream.push(delta);
        if (text === '') return;
        streamed = true;
        context.progress({ type: 'text_delta', messageId: context.replyMessageId, delta: text });
      };
      const organization = await callForStructured(
        context,
        'organization',
        organizationOutput,
        {
          instructions: organizationInstructions,
          input: transcript,
          tools: [],
          ...(context.streaming ? { onTextDelta } : {}),
          ...common,
        },
        { models: settings.models.organization },
      );
      record(organization.calls);
      const reply = organization.value.reply;
      if (context.streaming && (organization.repaired || !streamed)) {
        // What streamed was the invalid first answer (or nothing): show the checked reply instead.
        if (streamed) context.progress({ type: 'discard', messageId: context.replyMessageId });
        context.progress({ type: 'text_delta', messageId: context.replyMessageId, delta: reply });
      }
      return { text: reply, audit, modelCalls, state };
    },
  };
}

export type { StageOutput };
