import { describe, expect, it } from 'vitest';
import { replyActionsAnswerSchema } from '../../../src/domain/reply-actions.js';
import { REPLY_PLAN_JSON_SCHEMA } from '../../../src/runtime/reply-plan/plan-schema.js';

type Schema = Record<string, unknown>;

/** Every place in the schema that OpenAI's strict mode does not accept, by its path. */
function strictProblems(schema: Schema, path = '$'): string[] {
  const problems: string[] = [];
  if (schema['type'] === 'object' || schema['properties'] !== undefined) {
    const properties = (schema['properties'] ?? {}) as Record<string, Schema>;
    if (schema['additionalProperties'] !== false) problems.push(`${path}: additionalProperties is not false`);
    const required = (schema['required'] ?? []) as string[];
    const keys = Object.keys(properties);
    if (keys.length !== required.length || keys.some((key) => !required.includes(key))) problems.push(`${path}: not every property is required`);
    for (const [key, value] of Object.entries(properties)) problems.push(...strictProblems(value, `${path}.${key}`));
  }
  if (schema['items'] !== undefined) problems.push(...strictProblems(schema['items'] as Schema, `${path}[]`));
  for (const [index, option] of ((schema['anyOf'] ?? []) as Schema[]).entries()) problems.push(...strictProblems(option, `${path}|${index}`));
  for (const keyword of ['oneOf', 'allOf', 'not', 'if', 'patternProperties', 'minItems', 'maxItems']) {
    if (schema[keyword] !== undefined) problems.push(`${path}: ${keyword} is not supported`);
  }
  return problems;
}

describe('reply plan JSON schema', () => {
  it('is valid for strict structured output: an object root, every property required, no additional properties', () => {
    expect(REPLY_PLAN_JSON_SCHEMA['type']).toBe('object');
    expect(REPLY_PLAN_JSON_SCHEMA['anyOf']).toBeUndefined();
    expect(strictProblems(REPLY_PLAN_JSON_SCHEMA as Schema)).toEqual([]);
  });

  it('offers the six actions of the zod schema', () => {
    const items = ((REPLY_PLAN_JSON_SCHEMA['properties'] as Schema)['actions'] as Schema)['items'] as Schema;
    const types = (items['anyOf'] as Schema[]).map((option) => ((option['properties'] as Schema)['type'] as Schema)['enum']);
    expect(types.flat()).toEqual(['send_message', 'send_messages', 'fake_typing', 'add_reaction', 'wait', 'ignore']);
  });

  it('asks for what the zod schema accepts: a plan with every field, nullable ones null', () => {
    const sample = {
      actions: [
        { type: 'fake_typing', seconds: 2 },
        { type: 'send_message', text: 'Hi!', reply_to: null },
        { type: 'send_messages', messages: ['One', 'Two'] },
        { type: 'add_reaction', emoji: '👍', message_id: 77 },
        { type: 'wait', seconds: 1 },
        { type: 'ignore', reason: null },
      ],
    };
    expect(replyActionsAnswerSchema.safeParse(sample).success).toBe(true);
  });
});
