/**
 * A deterministic stand-in for an LLM, so the receptionist example runs without an API key. It reads the person's
 * last message with a few regular expressions and answers with a plan of actions, as a model does with
 * `agent.replies: actions`: a reaction on the message it read (by the `[message_id: N]` Palaver shows in front of
 * each of the person's messages), typing, two short messages, a pause, or nothing at all. It is a script, not a model.
 */
import type { ModelScript, ScriptedCall } from 'palaver/testing';

/** One action of a plan, as the model writes it (see docs/replies-as-actions.md). */
export type ScriptedAction =
  | { readonly type: 'send_message'; readonly text: string; readonly reply_to: number | string | null }
  | { readonly type: 'send_messages'; readonly messages: readonly string[] }
  | { readonly type: 'fake_typing'; readonly seconds: number }
  | { readonly type: 'add_reaction'; readonly emoji: string; readonly message_id: number | string }
  | { readonly type: 'wait'; readonly seconds: number }
  | { readonly type: 'ignore'; readonly reason: string | null };

const GREETING = /^(hi|hello|hey|good (morning|afternoon|evening))\b/i;
const BOOKING = /\b(appointment|book|booking|check-?up|cleaning|filling|see (a|the) dentist)\b/i;
const CHOICE = /\b(thursday|friday|10(:00)?|15:30)\b/i;
const THANKS = /\b(thanks|thank you|cheers)\b/i;
const NOTHING_TO_SAY = /^(ok|okay|k|👍|bye|see you)[.!]*$/i;
const EMERGENCY = /\b(bleeding|swollen|knocked[- ]out|emergency)\b/i;
const MESSAGE_ID = /^\[message_id: ([^\]\s]+)\]\s*/;

/** The receptionist's script; pass it to `startScriptedModelServer`. */
export const receptionistScript: ModelScript = (call) => {
  const { id, text } = lastMessage(call);
  return { text: JSON.stringify({ actions: planFor(text, id) }) };
};

/** The plan the receptionist answers `text` with; `id` is the message's id as Palaver showed it, if it had one. */
export function planFor(text: string, id: string | undefined): ScriptedAction[] {
  const react = (emoji: string): ScriptedAction[] => (id === undefined ? [] : [{ type: 'add_reaction', emoji, message_id: asId(id) }]);
  if (EMERGENCY.test(text)) {
    return [
      {
        type: 'send_message',
        text: 'Please call us right now on +1 555 0100, or emergency services if we are closed.',
        reply_to: id === undefined ? null : asId(id),
      },
    ];
  }
  if (NOTHING_TO_SAY.test(text)) return [{ type: 'ignore', reason: 'the conversation is over' }];
  if (THANKS.test(text)) return [...react('❤️'), { type: 'send_message', text: 'See you soon! 😊', reply_to: null }];
  if (CHOICE.test(text)) {
    const day = /friday|15:30/i.test(text) ? 'Friday at 15:30' : 'Thursday at 10:00';
    return [...react('👍'), { type: 'send_messages', messages: [`Done, you're booked for ${day}.`, 'We will text you a reminder the day before.'] }];
  }
  if (BOOKING.test(text)) {
    return [
      ...react('👍'),
      { type: 'send_message', text: 'Sure, let me look at the diary.', reply_to: null },
      { type: 'wait', seconds: 1.5 },
      { type: 'send_message', text: 'We have Thursday at 10:00 or Friday at 15:30. Which suits you?', reply_to: null },
    ];
  }
  if (GREETING.test(text)) {
    return [
      { type: 'fake_typing', seconds: 1 },
      { type: 'send_messages', messages: ['Hello, this is Mia from Harbour Dental 😊', 'How can I help you today?'] },
    ];
  }
  return [{ type: 'send_message', text: 'I can book, move or cancel a visit, or tell you about the clinic. What would you like?', reply_to: null }];
}

/** The person's last message in the call, without the id label, and that id. */
function lastMessage(call: ScriptedCall): { id: string | undefined; text: string } {
  const last = [...call.messages].reverse().find((item) => item.type === 'message' && item.role === 'user');
  const content = last?.type === 'message' ? last.content : '';
  const match = MESSAGE_ID.exec(content);
  return match ? { id: match[1], text: content.slice(match[0].length).trim() } : { id: undefined, text: content.trim() };
}

/** Telegram's ids are numbers; other channels' are strings. A model writes what it was shown. */
function asId(id: string): number | string {
  return /^\d+$/.test(id) ? Number(id) : id;
}
