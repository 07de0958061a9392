import type { ReplyActionLimits } from '../../domain/reply-actions.js';

/** What the prompt for replies as actions states, from config and the channel. */
export interface ReplyActionsPromptOptions {
  readonly limits: ReplyActionLimits;
  /** Typing is shown before each message by itself (`agent.actions.typingCharsPerSecond` above 0). */
  readonly typingBeforeMessages: boolean;
  /** The channel can show reactions at all. */
  readonly reactions: boolean;
  /** The reaction emoji the channel accepts, when it restricts them. */
  readonly reactionEmoji?: readonly string[];
}

/**
 * The section Palaver adds to the instructions in actions mode (`agent.replies: "actions"`), in English: the answer
 * format, each action, the limits, how message ids are shown, and what `ignore` means. Exported so the docs can quote
 * it as the model reads it.
 *
 * @example
 * replyActionsPrompt({ limits: { maxActions: 10, maxWaitSeconds: 30, maxTotalWaitSeconds: 60, maxMessageChars: 4096 }, typingBeforeMessages: true, reactions: true })
 */
export function replyActionsPrompt(options: ReplyActionsPromptOptions): string {
  const { limits } = options;
  const lines = [
    '## How you answer',
    'Answer like a person in a chat, with a short plan of actions that is carried out in order. Answer with JSON only, nothing before or after it:',
    '{"actions": [ ... ]}',
    '',
    'The actions:',
    '- {"type": "send_message", "text": "…", "reply_to": null}: send one message. reply_to: null, or the message_id of one of the person\'s messages to answer it as a quoted reply.',
    '- {"type": "send_messages", "messages": ["…", "…"]}: send several short messages, one after another.',
    '- {"type": "fake_typing", "seconds": 2}: show that you are typing for a while.',
  ];
  if (options.reactions) lines.push('- {"type": "add_reaction", "emoji": "👍", "message_id": 77}: react with an emoji to one of the person\'s messages.');
  lines.push(
    '- {"type": "wait", "seconds": 3}: pause before the next action.',
    '- {"type": "ignore", "reason": "…"}: do not answer at all this time; the person gets nothing. reason is for the log only (or null).',
    '',
    'Limits:',
    `- At most ${limits.maxActions} actions; each message of send_messages counts as one.`,
    `- Each wait or fake_typing lasts at most ${limits.maxWaitSeconds} seconds; all of them together at most ${limits.maxTotalWaitSeconds} seconds.`,
    `- Each message has text (never empty) of at most ${limits.maxMessageChars} characters.`,
    '',
    "Each of the person's messages is shown with its id in front of it, like `[message_id: 77] Hello`. Only these ids may be used in reply_to" +
      (options.reactions ? ' and add_reaction' : '') +
      '; never invent one, and never write such a label in your own messages.',
  );
  if (!options.reactions) lines.push('This chat cannot show reactions: do not use add_reaction.');
  else if (options.reactionEmoji !== undefined) lines.push(`Reactions here may only use these emoji: ${options.reactionEmoji.join(' ')}`);
  if (options.typingBeforeMessages) lines.push('Typing is shown before each message by itself; use fake_typing only for an extra pause.');
  return lines.join('\n');
}
