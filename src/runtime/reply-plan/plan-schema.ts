import type { JsonSchema, StructuredOutputSpec } from '../../domain/ports/model-provider.js';

/**
 * The JSON schema a model is asked to answer with in actions mode (Chat Completions `json_schema`, Responses
 * `text.format`, strict). OpenAI's strict mode wants an object at the root, every property required (an optional
 * one is nullable instead) and no additional properties; each action is one of six objects told apart by `type`.
 *
 * Written out by hand rather than converted from the zod schema: the zod schema accepts what strict mode cannot
 * express (omitted optional fields, a bare list), and the two must only agree on what the model is asked for. A test
 * checks that they do.
 */
const messageId: JsonSchema = {
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  description: "the id shown as [message_id: …] before one of the person's messages",
};

function action(type: string, description: string, properties: Record<string, JsonSchema>): JsonSchema {
  return {
    type: 'object',
    description,
    properties: { type: { type: 'string', enum: [type] }, ...properties },
    required: ['type', ...Object.keys(properties)],
    additionalProperties: false,
  };
}

export const REPLY_PLAN_JSON_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    actions: {
      type: 'array',
      description: 'the actions, carried out in order',
      items: {
        anyOf: [
          action('send_message', 'send one message', {
            text: { type: 'string', description: 'the message' },
            reply_to: { anyOf: [messageId, { type: 'null' }], description: 'a message_id to answer as a quoted reply, or null' },
          }),
          action('send_messages', 'send several short messages, one after another', { messages: { type: 'array', items: { type: 'string' } } }),
          action('fake_typing', 'show typing for a while', { seconds: { type: 'number' } }),
          action('add_reaction', "react to one of the person's messages", { emoji: { type: 'string' }, message_id: messageId }),
          action('wait', 'pause before the next action', { seconds: { type: 'number' } }),
          action('ignore', 'do not answer this time', { reason: { type: ['string', 'null'], description: 'why, for the log; never shown' } }),
        ],
      },
    },
  },
  required: ['actions'],
  additionalProperties: false,
};

/** The structured output a flow asks for as its final answer in actions mode. */
export const REPLY_PLAN_OUTPUT: StructuredOutputSpec = { name: 'reply_actions', schema: REPLY_PLAN_JSON_SCHEMA };
