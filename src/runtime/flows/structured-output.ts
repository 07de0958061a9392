import { z } from 'zod';
import { FlowError } from '../../domain/errors.js';
import type { FlowContext, ModelCall, ModelChoice } from '../../domain/ports/flow.js';
import type { ModelInputItem, ModelRequest, StructuredOutputSpec } from '../../domain/ports/model-provider.js';

/** A stage's output: its zod schema (the judge) and the JSON schema sent to the model (the request). */
export interface StageOutput<T> {
  readonly name: string;
  readonly schema: z.ZodType<T>;
  readonly spec: StructuredOutputSpec;
}

/** Builds a stage output from a zod schema; the JSON schema follows OpenAI's strict mode (zod's own conversion). */
export function stageOutput<T>(name: string, schema: z.ZodType<T>): StageOutput<T> {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { target: 'draft-2020-12' }) as Record<string, unknown>;
  return { name, schema, spec: { name, schema: json } };
}

/** The model's text read against a stage's schema: the value, or what is wrong with it (for the repair prompt). */
export function readStageOutput<T>(output: StageOutput<T>, text: string): { ok: true; value: T } | { ok: false; problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, problem: 'the answer is not JSON' };
  }
  const parsed = output.schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, problem: parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ') };
}

/** The message that asks a model to correct its structured output once. */
export function repairPrompt(name: string, problem: string): ModelInputItem {
  return {
    type: 'message',
    role: 'user',
    content: `Your last answer did not match the required "${name}" JSON schema (${problem}). Answer again with only JSON that matches the schema.`,
  };
}

export interface StructuredCall<T> {
  readonly value: T;
  /** The model calls made: one, or two when the output needed its repair. */
  readonly calls: readonly ModelCall[];
  readonly repaired: boolean;
}

/**
 * One model call whose answer must match `output`: an invalid answer is shown to the model with what is wrong and
 * asked for once more (without tools and without streaming); a second invalid answer is a `FlowError` (`invalid_stage_output`), never passed on.
 */
export async function callForStructured<T>(
  context: FlowContext,
  stage: string,
  output: StageOutput<T>,
  request: Omit<ModelRequest, 'output'>,
  choice: ModelChoice,
  /** The stage's answer when it was already made (by an agent loop); otherwise this makes the first call. */
  firstText?: string,
): Promise<StructuredCall<T>> {
  const calls: ModelCall[] = [];
  let text = firstText;
  if (text === undefined) {
    const first = await context.callModel({ ...request, output: output.spec }, request.input, choice);
    calls.push(first);
    text = first.response.text;
  }
  const read = readStageOutput(output, text);
  if (read.ok) return { value: read.value, calls, repaired: false };

  context.log.warn({ stage, problem: read.problem }, 'stage output invalid; asking the model to repair it once');
  const input = [...request.input, { type: 'message' as const, role: 'assistant' as const, content: text }, repairPrompt(output.name, read.problem)];
  const { onTextDelta: _stream, previousResponseId: _chain, ...rest } = request;
  const second = await context.callModel({ ...rest, input, tools: [], output: output.spec }, input, choice);
  calls.push(second);
  const reread = readStageOutput(output, second.response.text);
  if (reread.ok) return { value: reread.value, calls, repaired: true };
  throw new FlowError('invalid_stage_output', `The ${stage} stage answered with invalid structured output twice (${reread.problem}).`, { stage });
}
