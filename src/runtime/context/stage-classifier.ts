import { z } from 'zod';
import type { FlowContext, FlowRequest, ModelCallRecord } from '../../domain/ports/flow.js';
import type { ModelInputItem } from '../../domain/ports/model-provider.js';
import { callForStructured, stageOutput } from '../flows/structured-output.js';
import type { StageDefinition } from './stages.js';

/** The name of the classifier's own model set (`focus.classifier.model`) in `FlowContext.callModel`'s choice. */
export const CLASSIFIER_MODELS = 'focus.classifier';

/** The classification call as config gives it. */
export interface StageClassifierSettings {
  /** A named model set; the agent's primary model when absent. */
  readonly models?: string;
  /** How many of the last messages of the conversation the classifier sees. */
  readonly recentMessages: number;
}

export interface StageClassification {
  /** The stage chosen, or undefined when the call failed or answered badly twice (the rules' default applies). */
  readonly stage: StageDefinition | undefined;
  /** Every model call made, also the failed-output ones: their tokens count with the turn. */
  readonly calls: readonly ModelCallRecord[];
}

/**
 * One cheap call that picks the stage when no rule did: no tools, no streaming, only the last few messages and the
 * stage list with descriptions, answered as `{ stage }` from an enum of the stage ids (one repair). It never fails the
 * turn: a model failure or a second invalid answer is logged and leaves the stage to the rules' default. Only a spend
 * cap or the person leaving stops the turn, as they would at any other model call.
 */
export async function classifyStage(
  stages: readonly StageDefinition[],
  request: FlowRequest,
  context: FlowContext,
  settings: StageClassifierSettings,
): Promise<StageClassification> {
  const calls: ModelCallRecord[] = [];
  const ids = stages.map((stage) => stage.id) as [string, ...string[]];
  const output = stageOutput('conversation_stage', z.strictObject({ stage: z.enum(ids).describe('the id of the stage the latest message belongs to') }));
  // The records are kept as the calls answer, so a second invalid answer still counts its tokens.
  const recording: FlowContext = {
    ...context,
    get log() {
      return context.log;
    },
    async callModel(modelRequest, transcript, choice) {
      const call = await context.callModel(modelRequest, transcript, choice);
      calls.push(call.record);
      return call;
    },
  };
  const input = recentMessages([...request.history, ...request.newItems], settings.recentMessages);
  try {
    const answer = await callForStructured(
      recording,
      'stage classifier',
      output,
      {
        instructions: classifierInstructions(stages),
        input,
        tools: [],
        // Nothing chains to this call: the provider need not keep it.
        store: false,
        correlationId: request.correlationId,
        ...(request.signal ? { signal: request.signal } : {}),
      },
      settings.models === undefined ? {} : { models: settings.models },
    );
    return { stage: stages.find((stage) => stage.id === answer.value.stage), calls };
  } catch (error) {
    if (request.signal?.aborted) throw error;
    context.log.warn({ err: error }, 'stage classification failed; using the default stage');
    return { stage: undefined, calls };
  }
}

/** The classifier's whole prompt: the task and the stages, one a line with their descriptions. */
function classifierInstructions(stages: readonly StageDefinition[]): string {
  const list = stages.map((stage) => `- ${stage.id}${stage.description ? `: ${stage.description.trim()}` : ''}`).join('\n');
  return (
    "Classify the conversation: which of the stages below does the person's latest message belong to? " +
    'Answer only with JSON {"stage": "<stage id>"}.\n\nStages:\n' +
    list
  );
}

/** The last `count` plain messages (tool traffic left out: the classifier needs what was said, not how it was done). */
function recentMessages(items: readonly ModelInputItem[], count: number): ModelInputItem[] {
  return items.filter((item) => item.type === 'message').slice(-count);
}
