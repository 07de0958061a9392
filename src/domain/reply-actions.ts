import { z } from 'zod';

/**
 * Replies as actions (`agent.replies: "actions"`): instead of one block of text the model answers with a short plan
 * that Palaver checks and carries out in order — type for a while, send one or more short messages, react to one of
 * the person's messages, wait, or not answer at all. This file is the plan's one definition: its zod schema (what is
 * accepted from a model), its limits, and the checked plan the runtime executes.
 *
 * Model output is untrusted input: a plan is only ever acted on after {@link ReplyActionLimits} and the id check
 * passed. Message ids are the channel's own (Telegram's `message_id`); the model sees them beside each inbound
 * message and may only react to ids it was shown.
 */

/** A channel message id as a model writes it: Telegram's are numbers, other channels' strings. Kept as a string. */
const messageId = z.union([z.number().int().nonnegative(), z.string().min(1).max(128)]).transform((id) => String(id));
const text = z.string();
const seconds = z.number();

/** One action, as the model writes it (`{"type": "wait", "seconds": 2}`). Unknown types and fields are refused. */
export const replyActionSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('send_message'), text, reply_to: messageId.nullish() }),
  z.strictObject({ type: z.literal('send_messages'), messages: z.array(text) }),
  z.strictObject({ type: z.literal('fake_typing'), seconds }),
  z.strictObject({ type: z.literal('add_reaction'), emoji: z.string().min(1).max(16), message_id: messageId }),
  z.strictObject({ type: z.literal('wait'), seconds }),
  z.strictObject({ type: z.literal('ignore'), reason: z.string().max(1_000).nullish() }),
]);

export type ReplyActionInput = z.output<typeof replyActionSchema>;

/** The model's answer on the wire: `{"actions": [...]}` (strict structured output needs an object), or a bare list. */
export const replyActionsAnswerSchema = z.union([z.strictObject({ actions: z.array(replyActionSchema) }), z.array(replyActionSchema)]);

/** The limits a plan must keep (config `agent.actions`, with these defaults). */
export interface ReplyActionLimits {
  /** Most actions in one plan, each message of a `send_messages` counted as one. Default 10. */
  readonly maxActions: number;
  /** Longest single `wait` or `fake_typing`, in seconds. Default 30. */
  readonly maxWaitSeconds: number;
  /** Longest total of waits and typing in one plan (the typing shown before messages included), in seconds. Default 60. */
  readonly maxTotalWaitSeconds: number;
  /** Longest text of one message, in characters (the agent's `maxReplyChars`). */
  readonly maxMessageChars: number;
}

export const DEFAULT_REPLY_ACTION_LIMITS: Omit<ReplyActionLimits, 'maxMessageChars'> = { maxActions: 10, maxWaitSeconds: 30, maxTotalWaitSeconds: 60 };

/**
 * A checked plan step, as the runtime carries it out. `send_messages` is expanded into one `send` per message, so
 * every step that reaches a channel is one outbox entry; waits and typing are in milliseconds.
 */
export type ReplyStep =
  | { readonly kind: 'send'; readonly text: string; readonly replyTo: string | null }
  | { readonly kind: 'typing'; readonly ms: number }
  | { readonly kind: 'react'; readonly emoji: string; readonly messageId: string }
  | { readonly kind: 'wait'; readonly ms: number }
  | { readonly kind: 'ignore'; readonly reason: string | null };

/** A plan that passed every check: safe to store and carry out. */
export interface ReplyPlan {
  readonly steps: readonly ReplyStep[];
}

/** Why a model's answer was refused (logged, counted by `reason`, audited; never sent). */
export type ReplyPlanProblemReason =
  | 'invalid_json'
  | 'invalid_actions'
  | 'unknown_action'
  | 'empty'
  | 'too_many_actions'
  | 'invalid_wait'
  | 'too_long_waits'
  | 'invalid_text'
  | 'unknown_message_id';

export type CheckedReplyPlan =
  | { readonly ok: true; readonly plan: ReplyPlan }
  | { readonly ok: false; readonly reason: ReplyPlanProblemReason; readonly problem: string };
