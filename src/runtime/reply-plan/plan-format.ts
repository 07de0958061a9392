import type { ReplyFormat } from '../../domain/ports/flow.js';
import type { ReplyActionLimits } from '../../domain/reply-actions.js';
import { replyActionsPrompt } from '../context/reply-actions-prompt.js';
import type { TurnScope } from '../turn/turn-context.js';
import { REPLY_PLAN_OUTPUT } from './plan-schema.js';
import { replyActionLimits } from './reply-settings.js';

/** The limits a plan of this turn is checked against (config's, and the agent's and the channel's message length). */
export function planLimitsOf(scope: TurnScope): ReplyActionLimits {
  return replyActionLimits(scope.deps.replies.actions, scope.deps.agent.maxReplyChars, scope.channel.capabilities.maxMessageChars);
}

/** What a flow is asked for in actions mode: the plan's JSON schema, and the prompt with this turn's limits and channel. */
export function replyPlanFormat(scope: TurnScope): ReplyFormat {
  const { capabilities } = scope.channel;
  return {
    output: REPLY_PLAN_OUTPUT,
    instructions: replyActionsPrompt({
      limits: planLimitsOf(scope),
      typingBeforeMessages: scope.deps.replies.actions.typingCharsPerSecond > 0,
      reactions: capabilities.reactions,
      ...(capabilities.reactionEmoji === undefined ? {} : { reactionEmoji: capabilities.reactionEmoji }),
    }),
  };
}
