import { describe, expect, it } from 'vitest';
import { replyActionsPrompt } from '../../../src/runtime/context/reply-actions-prompt.js';

const limits = { maxActions: 7, maxWaitSeconds: 12, maxTotalWaitSeconds: 40, maxMessageChars: 900 };

describe('reply actions prompt', () => {
  it('states the format, every action, the configured limits, how ids are shown and that ignore sends nothing', () => {
    const prompt = replyActionsPrompt({ limits, typingBeforeMessages: true, reactions: true });
    expect(prompt).toContain('{"actions": [ ... ]}');
    for (const type of ['send_message', 'send_messages', 'fake_typing', 'add_reaction', 'wait', 'ignore']) expect(prompt).toContain(`"type": "${type}"`);
    expect(prompt).toContain('At most 7 actions; each message of send_messages counts as one.');
    expect(prompt).toContain('at most 12 seconds; all of them together at most 40 seconds');
    expect(prompt).toContain('at most 900 characters');
    expect(prompt).toContain('[message_id: 77]');
    expect(prompt).toContain('the person gets nothing');
  });

  it('names the allowed reaction emoji where the channel restricts them, and forbids reactions where it has none', () => {
    expect(replyActionsPrompt({ limits, typingBeforeMessages: false, reactions: true, reactionEmoji: ['👍', '🔥'] })).toContain('only use these emoji: 👍 🔥');
    const none = replyActionsPrompt({ limits, typingBeforeMessages: false, reactions: false });
    expect(none).not.toContain('"type": "add_reaction"');
    expect(none).toContain('do not use add_reaction');
  });
});
