import { describe, expect, it } from 'vitest';
import { checkReplyPlan, type ReplyPlanCheckOptions } from '../../../src/runtime/reply-plan/check-plan.js';

const options: ReplyPlanCheckOptions = {
  limits: { maxActions: 10, maxWaitSeconds: 30, maxTotalWaitSeconds: 60, maxMessageChars: 100 },
  recentMessageIds: new Set(['76', '77']),
};

const check = (answer: unknown, extra: Partial<ReplyPlanCheckOptions> = {}) =>
  checkReplyPlan(typeof answer === 'string' ? answer : JSON.stringify(answer), { ...options, ...extra });
const plan = (...actions: unknown[]) => ({ actions });

describe('reply plan check', () => {
  it('turns a valid plan into steps in order: messages expanded, seconds in milliseconds, texts trimmed', () => {
    const checked = check(
      plan(
        { type: 'add_reaction', emoji: '👍', message_id: 77 },
        { type: 'fake_typing', seconds: 1.5 },
        { type: 'send_messages', messages: [' Hi! ', 'One moment.'] },
        { type: 'wait', seconds: 2 },
        { type: 'send_message', text: 'Done.', reply_to: '76' },
      ),
    );
    expect(checked).toEqual({
      ok: true,
      plan: {
        steps: [
          { kind: 'react', emoji: '👍', messageId: '77' },
          { kind: 'typing', ms: 1_500 },
          { kind: 'send', text: 'Hi!', replyTo: null },
          { kind: 'send', text: 'One moment.', replyTo: null },
          { kind: 'wait', ms: 2_000 },
          { kind: 'send', text: 'Done.', replyTo: '76' },
        ],
      },
    });
  });

  it('accepts a bare list of actions', () => {
    expect(check([{ type: 'send_message', text: 'Hello' }])).toEqual({ ok: true, plan: { steps: [{ kind: 'send', text: 'Hello', replyTo: null }] } });
  });

  it('accepts JSON inside one ``` fence, and nothing else around it', () => {
    const json = JSON.stringify(plan({ type: 'ignore', reason: null }));
    expect(check(`\`\`\`json\n${json}\n\`\`\``)).toEqual({ ok: true, plan: { steps: [{ kind: 'ignore', reason: null }] } });
    expect(check(`Here you go:\n\`\`\`json\n${json}\n\`\`\``)).toMatchObject({ ok: false, reason: 'invalid_json' });
  });

  it('refuses text that is not JSON', () => {
    expect(check('Sure! I will answer now.')).toMatchObject({ ok: false, reason: 'invalid_json' });
  });

  it('refuses an object with other keys than actions, or actions that are not a list', () => {
    expect(check({ actions: [], note: 'x' })).toMatchObject({ ok: false, reason: 'invalid_actions' });
    expect(check({ actions: 'send' })).toMatchObject({ ok: false, reason: 'invalid_actions' });
  });

  it('refuses an unknown action by its type', () => {
    expect(check(plan({ type: 'send_sticker', sticker: 'cat' }))).toMatchObject({
      ok: false,
      reason: 'unknown_action',
      problem: expect.stringContaining('send_sticker'),
    });
  });

  it('refuses a known action with a wrong or extra field', () => {
    expect(check(plan({ type: 'wait', seconds: '2' }))).toMatchObject({ ok: false, reason: 'invalid_actions', problem: expect.stringContaining('seconds') });
    expect(check(plan({ type: 'wait', seconds: 2, until: 'later' }))).toMatchObject({ ok: false, reason: 'invalid_actions' });
  });

  it('refuses an empty list', () => {
    expect(check(plan())).toMatchObject({ ok: false, reason: 'empty' });
  });

  it('refuses 11 actions when 10 are allowed', () => {
    const eleven = Array.from({ length: 11 }, () => ({ type: 'wait', seconds: 1 }));
    expect(check(plan(...eleven))).toMatchObject({ ok: false, reason: 'too_many_actions' });
    expect(check(plan(...eleven.slice(1)))).toMatchObject({ ok: true });
  });

  it('counts each message of send_messages toward maxActions, as separate send_message actions count', () => {
    const texts = (count: number) => Array.from({ length: count }, (_, index) => `message ${index}`);
    expect(check(plan({ type: 'send_messages', messages: texts(11) }))).toMatchObject({
      ok: false,
      reason: 'too_many_actions',
      problem: expect.stringContaining('11 actions'),
    });
    expect(check(plan({ type: 'send_messages', messages: texts(1_000) }))).toMatchObject({
      ok: false,
      reason: 'too_many_actions',
      problem: expect.stringContaining('1000 actions'),
    });
    // Five other actions and six messages in one send_messages make eleven.
    const five = Array.from({ length: 5 }, () => ({ type: 'wait', seconds: 1 }));
    expect(check(plan(...five, { type: 'send_messages', messages: texts(6) }))).toMatchObject({ ok: false, reason: 'too_many_actions' });
    const ten = check(plan(...five, { type: 'send_messages', messages: texts(5) }));
    expect(ten.ok && ten.plan.steps.filter((step) => step.kind === 'send')).toHaveLength(5);
    expect(check(plan({ type: 'send_messages', messages: texts(10) }))).toMatchObject({ ok: true });
  });

  it('refuses a negative or over-long wait or typing', () => {
    expect(check(plan({ type: 'wait', seconds: -1 }))).toMatchObject({ ok: false, reason: 'invalid_wait' });
    expect(check(plan({ type: 'fake_typing', seconds: 31 }))).toMatchObject({ ok: false, reason: 'invalid_wait' });
  });

  it('refuses waits and typing that add up to more than the total allowed', () => {
    expect(check(plan({ type: 'wait', seconds: 30 }, { type: 'fake_typing', seconds: 30 }, { type: 'wait', seconds: 0.5 }))).toMatchObject({
      ok: false,
      reason: 'too_long_waits',
    });
    expect(check(plan({ type: 'wait', seconds: 30 }, { type: 'fake_typing', seconds: 30 }))).toMatchObject({ ok: true });
  });

  it('refuses an empty or over-long message, and send_messages without messages', () => {
    expect(check(plan({ type: 'send_message', text: '   ' }))).toMatchObject({ ok: false, reason: 'invalid_text' });
    expect(check(plan({ type: 'send_messages', messages: ['ok', 'x'.repeat(101)] }))).toMatchObject({
      ok: false,
      reason: 'invalid_text',
      problem: expect.stringContaining('message 1'),
    });
    expect(check(plan({ type: 'send_messages', messages: [] }))).toMatchObject({ ok: false, reason: 'invalid_text' });
  });

  it('refuses a reaction or a quoted reply to a message id the model was not shown', () => {
    expect(check(plan({ type: 'add_reaction', emoji: '👍', message_id: 999 }))).toMatchObject({ ok: false, reason: 'unknown_message_id' });
    expect(check(plan({ type: 'send_message', text: 'Yes', reply_to: 5 }))).toMatchObject({ ok: false, reason: 'unknown_message_id' });
  });

  it('refuses a reaction emoji the channel does not allow, when it restricts them', () => {
    const reaction = plan({ type: 'add_reaction', emoji: '🦄', message_id: '77' });
    expect(check(reaction, { reactionEmoji: ['👍', '❤'] })).toMatchObject({ ok: false, reason: 'invalid_actions', problem: expect.stringContaining('🦄') });
    expect(check(reaction)).toMatchObject({ ok: true });
  });

  it('makes message text storable: NUL dropped, lone surrogates replaced', () => {
    const checked = check(plan({ type: 'send_message', text: 'a\u0000b\uD800c' }));
    expect(checked).toEqual({ ok: true, plan: { steps: [{ kind: 'send', text: 'ab\uFFFDc', replyTo: null }] } });
  });
});
