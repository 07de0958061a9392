import {
  replyActionSchema,
  type CheckedReplyPlan,
  type ReplyActionInput,
  type ReplyActionLimits,
  type ReplyPlanProblemReason,
  type ReplyStep,
} from '../../domain/reply-actions.js';
import { toStorableText } from '../../domain/storable-text.js';

/** What a plan is checked against besides its own shape. */
export interface ReplyPlanCheckOptions {
  readonly limits: ReplyActionLimits;
  /**
   * The channel message ids the model was shown (the batch's and the history's person messages): the only ones a
   * reaction or a `reply_to` may name. The model may not invent ids.
   */
  readonly recentMessageIds: ReadonlySet<string>;
  /** The reaction emoji the channel accepts, when it restricts them (Telegram); absent: any. */
  readonly reactionEmoji?: readonly string[];
}

const ACTION_TYPES: ReadonlySet<string> = new Set(['send_message', 'send_messages', 'fake_typing', 'add_reaction', 'wait', 'ignore']);

/** One ``` fence around the whole answer (some models add it even when told not to), with an optional `json` tag. */
const FENCE = /^```(?:json)?[ \t]*\r?\n?([\s\S]*?)\r?\n?```$/i;

/** A refusal: why (the metric's label) and what exactly, in words the repair prompt can show the model. */
function refuse(reason: ReplyPlanProblemReason, problem: string): CheckedReplyPlan {
  return { ok: false, reason, problem };
}

/**
 * Reads a model's answer in actions mode into a plan that is safe to store and carry out, or says why not. Accepts
 * `{"actions": [...]}` or a bare list, optionally inside one ``` fence and nothing else; every action must match the
 * schema and the limits (each message of a `send_messages` counts as one action), and a reaction or `reply_to` must
 * name one of `recentMessageIds`. `send_messages` becomes one `send` step per message; seconds become milliseconds; texts are trimmed and made storable.
 *
 * Pure and allocation-light: it runs on every turn in actions mode.
 */
export function checkReplyPlan(text: string, options: ReplyPlanCheckOptions): CheckedReplyPlan {
  const trimmed = text.trim();
  const body = FENCE.exec(trimmed)?.[1] ?? trimmed;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return refuse('invalid_json', 'the answer is not valid JSON');
  }
  const list = Array.isArray(json) ? json : actionsOf(json);
  if (list === undefined) return refuse('invalid_actions', 'the answer must be an object {"actions": [...]} with no other keys, or a list of actions');
  const { limits } = options;
  if (list.length === 0) return refuse('empty', 'the list of actions is empty (use {"type": "ignore"} to not answer)');
  const counted = countedActions(list);
  if (counted > limits.maxActions) {
    return refuse('too_many_actions', `${counted} actions, each message of send_messages counted as one; at most ${limits.maxActions} are allowed`);
  }

  const steps: ReplyStep[] = [];
  let waitedSeconds = 0;
  for (let index = 0; index < list.length; index++) {
    const raw: unknown = list[index];
    const type = raw !== null && typeof raw === 'object' ? (raw as { type?: unknown }).type : undefined;
    if (typeof type === 'string' && !ACTION_TYPES.has(type))
      return refuse('unknown_action', `action ${index}: unknown type ${JSON.stringify(type.slice(0, 40))}`);
    const parsed = replyActionSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return refuse('invalid_actions', `action ${index}: ${issue ? `${issue.path.join('.') || '(action)'}: ${issue.message}` : 'not a valid action'}`);
    }
    const problem = addSteps(parsed.data, index, options, steps);
    if (problem) return problem;
    if (parsed.data.type === 'wait' || parsed.data.type === 'fake_typing') waitedSeconds += parsed.data.seconds;
  }
  if (waitedSeconds > limits.maxTotalWaitSeconds) {
    return refuse('too_long_waits', `waits and typing add up to ${waitedSeconds} seconds; at most ${limits.maxTotalWaitSeconds} per answer`);
  }
  return { ok: true, plan: { steps } };
}

/**
 * The actions a plan counts against `maxActions`: each message of a `send_messages` counts as one, so one action
 * cannot send more messages than as many separate `send_message` actions could. Counted before any text is read.
 */
function countedActions(list: readonly unknown[]): number {
  let count = 0;
  for (const raw of list) {
    const messages =
      raw !== null && typeof raw === 'object' && (raw as { type?: unknown }).type === 'send_messages' ? (raw as { messages?: unknown }).messages : undefined;
    count += Array.isArray(messages) ? Math.max(1, messages.length) : 1;
  }
  return count;
}

/** The list inside `{"actions": [...]}`, or undefined for any other shape (other keys are refused, as strict output would). */
function actionsOf(json: unknown): readonly unknown[] | undefined {
  if (json === null || typeof json !== 'object') return undefined;
  const keys = Object.keys(json);
  if (keys.length !== 1 || keys[0] !== 'actions') return undefined;
  const actions = (json as { actions: unknown }).actions;
  return Array.isArray(actions) ? actions : undefined;
}

/** Appends the steps of one action, or returns why the action is refused. */
function addSteps(action: ReplyActionInput, index: number, options: ReplyPlanCheckOptions, steps: ReplyStep[]): CheckedReplyPlan | undefined {
  const { limits } = options;
  switch (action.type) {
    case 'send_message': {
      const text = messageText(action.text, limits);
      if (typeof text !== 'string') return refuse('invalid_text', `action ${index}: ${text.problem}`);
      const replyTo = action.reply_to ?? null;
      if (replyTo !== null && !options.recentMessageIds.has(replyTo)) return unknownId(index, 'reply_to', replyTo);
      steps.push({ kind: 'send', text, replyTo });
      return undefined;
    }
    case 'send_messages': {
      if (action.messages.length === 0) return refuse('invalid_text', `action ${index}: send_messages has no messages`);
      for (const [position, message] of action.messages.entries()) {
        const text = messageText(message, limits);
        if (typeof text !== 'string') return refuse('invalid_text', `action ${index}, message ${position}: ${text.problem}`);
        steps.push({ kind: 'send', text, replyTo: null });
      }
      return undefined;
    }
    case 'fake_typing':
    case 'wait': {
      const { seconds } = action;
      if (!Number.isFinite(seconds) || seconds < 0 || seconds > limits.maxWaitSeconds) {
        return refuse('invalid_wait', `action ${index}: ${action.type} of ${seconds} seconds; each must be between 0 and ${limits.maxWaitSeconds}`);
      }
      const ms = Math.round(seconds * 1_000);
      steps.push(action.type === 'wait' ? { kind: 'wait', ms } : { kind: 'typing', ms });
      return undefined;
    }
    case 'add_reaction': {
      if (!options.recentMessageIds.has(action.message_id)) return unknownId(index, 'message_id', action.message_id);
      const emoji = toStorableText(action.emoji.trim(), 'drop');
      if (options.reactionEmoji !== undefined && !options.reactionEmoji.includes(emoji)) {
        return refuse('invalid_actions', `action ${index}: the emoji ${JSON.stringify(emoji)} is not one this channel allows`);
      }
      steps.push({ kind: 'react', emoji, messageId: action.message_id });
      return undefined;
    }
    case 'ignore': {
      const reason = action.reason?.trim();
      steps.push({ kind: 'ignore', reason: reason ? toStorableText(reason, 'drop') : null });
      return undefined;
    }
  }
}

function unknownId(index: number, field: string, id: string): CheckedReplyPlan {
  return refuse(
    'unknown_message_id',
    `action ${index}: ${field} ${JSON.stringify(id.slice(0, 40))} is not the id of one of the person's messages shown to you`,
  );
}

/** A message's text, trimmed and storable, or why it cannot be sent. */
function messageText(raw: string, limits: ReplyActionLimits): string | { readonly problem: string } {
  const text = toStorableText(raw.trim(), 'drop');
  if (text === '') return { problem: 'the message text is empty' };
  if (text.length > limits.maxMessageChars) return { problem: `the message is ${text.length} characters long; at most ${limits.maxMessageChars}` };
  return text;
}
