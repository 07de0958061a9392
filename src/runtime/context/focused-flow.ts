import { FencedOut } from '../../domain/errors.js';
import type { Flow, FlowContext, FlowRequest, FlowResult, ModelCallRecord } from '../../domain/ports/flow.js';
import type { ModelToolCall } from '../../domain/ports/model-provider.js';
import { systemText } from '../../i18n/index.js';
import type { ObservedFocus } from '../call-observer.js';
import { FocusKeeper, focusIsEmpty, hiddenFocusBlock, type FocusEntityType, type FocusSnapshot, type FocusStore } from './focus.js';
import { classifyStage, type StageClassifierSettings } from './stage-classifier.js';
import { detectStage, withScenario, type DetectedStage, type StageDefinition } from './stages.js';

/** Stages and focus of one agent, as config gives them. */
export interface FocusSettings {
  readonly stages: readonly StageDefinition[];
  readonly entities: readonly FocusEntityType[];
  /** Per stage id, the fixed reply of a viewing stage with nothing to show, per language; else Palaver's own text. */
  readonly emptyReplies?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** When set, a cheap classification call picks the stage when no keyword or last-tool rule matched. */
  readonly classifier?: StageClassifierSettings;
}

/** What the wrapper reports beside its log lines. */
export interface FocusHooks {
  /** A needed entity type could not be loaded (its tool failed, timed out or answered badly); the turn went on without it. */
  readonly onLoadFailed?: (entityType: string) => void;
  /** The focus the stage needed, once loaded (what `palaver dev`'s playground shows); set only when watched. */
  readonly onLoaded?: (focus: ObservedFocus) => void;
}

/**
 * Wraps a flow with stages and entities in focus: finds the stage by its rules (or the classifier), loads the focus the stage needs
 * (through the same tool path as the model, so for the bound user only), answers an empty viewing stage with a
 * fixed reply and no model call, and otherwise runs the flow with the stage's scenario and the hidden block in its
 * instructions and every tool call checked against the focus. Focus is an aid, not a precondition: a type that
 * cannot be loaded is logged, counted and marked unavailable in the hidden block, and the turn goes on without it.
 */
export function withFocus(inner: Flow, settings: FocusSettings, store: FocusStore, hooks: FocusHooks = {}): Flow {
  return {
    name: inner.name,
    async run(request: FlowRequest, context: FlowContext): Promise<FlowResult> {
      const keeper = new FocusKeeper(settings.entities, store, () => context.now().getTime());
      // The person's own words: a sender label (a group member's name) must not match a stage keyword.
      const text = (request.newTexts ?? request.newItems.map((item) => (item.type === 'message' && item.role === 'user' ? item.content : ''))).join('\n');
      const lastTool = request.state.recentToolCalls.at(-1)?.name;
      let detected: DetectedStage | undefined = detectStage(settings.stages, { text, ...(lastTool === undefined ? {} : { lastToolCalled: lastTool }) });
      const classifierCalls: ModelCallRecord[] = [];
      if (settings.classifier !== undefined && settings.stages.length > 1 && (detected === undefined || detected.by === 'default')) {
        const classified = await classifyStage(settings.stages, request, context, settings.classifier);
        classifierCalls.push(...classified.calls);
        if (classified.stage !== undefined) detected = { stage: classified.stage, by: 'classifier' };
      }
      const stage = detected?.stage;
      if (detected !== undefined) context.log.info({ stage: detected.stage.id, by: detected.by }, 'conversation stage');

      const role = request.state.role ?? context.settings.defaultRole;
      // The person this turn answers (the user the server bound), not the conversation: a group has several.
      const owner = { sessionId: request.session.id, userId: request.user.id };
      const focus: FocusSnapshot[] = [];
      const unavailable: string[] = [];
      const runLoader = (loadTool: string) =>
        context.runTool({ callId: `focus-${loadTool}-${request.correlationId}`, name: loadTool, arguments: '{}' }, role, request.state);
      // Each type on its own: one failing loader leaves the others in focus.
      for (const entityType of stage?.needs ?? []) {
        try {
          focus.push(...(await keeper.load(owner, [entityType], runLoader)));
        } catch (error) {
          // The person left, or another process owns the conversation now: the turn stops, as at any other call.
          if (request.signal?.aborted || error instanceof FencedOut) throw error;
          unavailable.push(entityType);
          hooks.onLoadFailed?.(entityType);
          context.log.warn({ err: error, entityType }, 'focus could not be loaded; the turn goes on without it');
        }
      }

      hooks.onLoaded?.({
        correlationId: request.correlationId,
        sessionId: request.session.id,
        ...(detected === undefined ? {} : { stage: { id: detected.stage.id, by: detected.by } }),
        entities: focus,
        unavailable,
      });

      // "Nothing to show" only when every needed type was loaded: a failed load is not an empty list.
      if (stage?.viewing === true && unavailable.length === 0 && focusIsEmpty(focus)) {
        const configured = settings.emptyReplies?.[stage.id];
        const reply = configured?.[request.language] ?? configured?.[request.language.split('-')[0]!] ?? systemText(request.language, 'focus.nothingToShow');
        // Replies as actions: Palaver's own reply is a plan of one message.
        const text = context.settings.replyFormat ? JSON.stringify({ actions: [{ type: 'send_message', text: reply, reply_to: null }] }) : reply;
        return { text, audit: [], modelCalls: classifierCalls, state: request.state };
      }

      const block = hiddenFocusBlock(focus, unavailable);
      const focusedContext: FlowContext = {
        settings: context.settings,
        get log() {
          return context.log;
        },
        now: () => context.now(),
        toolsFor: (currentRole) => context.toolsFor(currentRole),
        hostedMcpFor: (currentRole) => context.hostedMcpFor(currentRole),
        roleFromHostedCalls: (calls, currentRole) => context.roleFromHostedCalls(calls, currentRole),
        callModel: (modelRequest, transcript, choice) => context.callModel(modelRequest, transcript, choice),
        progress: (event) => context.progress(event),
        waitsForApproval: () => context.waitsForApproval(),
        decided: (callId) => context.decided(callId),
        limitReached: (limit, tool) => context.limitReached(limit, tool),
        streaming: context.streaming,
        replyMessageId: context.replyMessageId,
        instructions: (currentRole, state) => {
          const base = withScenario(context.instructions(currentRole, state), stage);
          return block === '' ? base : `${base}\n\n${block}`;
        },
        async runTool(call: ModelToolCall, currentRole, state) {
          // A call decided on passed this check when it was asked about; the focus now follows the person's answer.
          const refusal = context.decided(call.callId) ? undefined : keeper.check(call, focus, unavailable);
          if (refusal !== undefined) return { callId: call.callId, ...refusal, effects: {}, durationMs: 0 };
          const result = await context.runTool(call, currentRole, state);
          if (!result.isError) await keeper.afterTool(owner, call.name);
          return result;
        },
      };
      const result = await inner.run(request, focusedContext);
      // The classification is part of the turn: its tokens are priced and summed with the flow's.
      return classifierCalls.length === 0 ? result : { ...result, modelCalls: [...classifierCalls, ...result.modelCalls] };
    },
  };
}
