import type { ReplyActionLimits } from '../../domain/reply-actions.js';

/** How the model answers: one reply text, or a checked plan of actions (`agent.replies`). */
export type ReplyMode = 'text' | 'actions';

/** Limits and pacing of replies as actions (config `agent.actions`). */
export interface ReplyActionSettings extends Omit<ReplyActionLimits, 'maxMessageChars'> {
  /** Typing shown before each message lasts its length at this speed (0: none). */
  readonly typingCharsPerSecond: number;
  /** Longest typing shown before one message, in seconds. */
  readonly maxTypingSeconds: number;
  /** A new message from the person drops the plan's remaining waits and sends. */
  readonly interruptOnNewMessage: boolean;
  /** After the one repair attempt fails: send nothing (`silence`) or the apology (`apologise`). */
  readonly onInvalidActions: 'silence' | 'apologise';
}

/** The reply mode of the agent and of each channel that overrides it, and the action settings. */
export interface ReplySettings {
  /** The agent's mode (`agent.replies`). */
  readonly mode: ReplyMode;
  /** Channels whose config sets `replies`, by channel name; the others use {@link mode}. */
  readonly channels: ReadonlyMap<string, ReplyMode>;
  readonly actions: ReplyActionSettings;
}

/** The mode a turn on `channel` answers in: the channel's override, else the agent's. */
export function replyModeFor(settings: ReplySettings, channel: string): ReplyMode {
  return settings.channels.get(channel) ?? settings.mode;
}

/**
 * The limits a plan is checked against on a channel: config's, and messages no longer than the agent's longest reply
 * or the channel's longest message (each message of a plan is sent as one, never split).
 */
export function replyActionLimits(actions: ReplyActionSettings, maxReplyChars: number, channelMaxChars: number | null): ReplyActionLimits {
  const { maxActions, maxWaitSeconds, maxTotalWaitSeconds } = actions;
  return {
    maxActions,
    maxWaitSeconds,
    maxTotalWaitSeconds,
    maxMessageChars: channelMaxChars === null ? maxReplyChars : Math.min(maxReplyChars, channelMaxChars),
  };
}
