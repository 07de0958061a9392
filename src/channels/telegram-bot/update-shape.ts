import { z } from 'zod';

// The fields of an update this channel reads, checked before grammY or the pipeline sees them: Telegram sends them
// this way, so an update shaped otherwise is forged, corrupted or from a Bot API server that is not Telegram's. A
// chat id that is not an integer would become a conversation no reply can reach. Everything else passes as it is.

const id = z.number().int().refine(Number.isSafeInteger, 'not a safe integer');
const user = z.looseObject({
  id,
  is_bot: z.boolean(),
  first_name: z.string(),
  last_name: z.string().optional(),
  username: z.string().optional(),
  language_code: z.string().optional(),
});
const entity = z.looseObject({ type: z.string(), offset: z.number().int().min(0), length: z.number().int().min(0) });
const file = z.looseObject({ file_id: z.string(), file_size: z.number().int().optional(), mime_type: z.string().optional() });

const message = z.looseObject({
  message_id: id,
  chat: z.looseObject({ id, type: z.string() }),
  from: user.optional(),
  text: z.string().optional(),
  caption: z.string().optional(),
  entities: z.array(entity).optional(),
  caption_entities: z.array(entity).optional(),
  message_thread_id: id.optional(),
  is_topic_message: z.boolean().optional(),
  business_connection_id: z.string().optional(),
  reply_to_message: z.looseObject({ message_id: id, from: user.optional(), text: z.string().optional(), caption: z.string().optional() }).optional(),
  quote: z.looseObject({ text: z.string() }).optional(),
  contact: z.looseObject({ phone_number: z.string(), first_name: z.string(), last_name: z.string().optional(), user_id: id.optional() }).optional(),
  voice: file.optional(),
  audio: file.optional(),
});

/** A button pressed: who pressed it decides, so the presser must be a well-formed user. */
const callbackQuery = z.looseObject({
  id: z.string(),
  from: user,
  data: z.string().optional(),
  message: z
    .looseObject({
      message_id: id,
      chat: z.looseObject({ id, type: z.string() }),
      date: z.number().int(),
      text: z.string().optional(),
      entities: z.array(entity).optional(),
      business_connection_id: z.string().optional(),
    })
    .optional(),
});

const update = z.looseObject({
  update_id: id,
  message: message.optional(),
  business_message: message.extend({ business_connection_id: z.string() }).optional(),
  business_connection: z.looseObject({ id: z.string(), user: user, user_chat_id: id, is_enabled: z.boolean() }).optional(),
  callback_query: callbackQuery.optional(),
});

/** What is wrong with an update's shape (`message.chat.id: expected number`), or undefined when it is usable. */
export function malformation(value: unknown): string | undefined {
  const result = update.safeParse(value);
  if (result.success) return undefined;
  return result.error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.join('.') || '(update)'}: ${issue.message}`)
    .join('; ');
}
