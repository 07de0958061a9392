import { systemText } from '../../i18n/index.js';
import { splitReply } from '../reply.js';
import type { Answer } from './answer.js';
import { closeTurn } from './close-turn.js';
import { newMessages, outcome, replyMessage, usageOf } from './persist-reply.js';
import type { TurnScope } from './turn-context.js';

/**
 * Whether every message of the turn was stopped by a per-person rate limit (`limits.perPerson`): then the turn makes
 * no model call. A batch that also holds an admitted message is answered as usual (one model call for all of them).
 */
export function stoppedByRateLimit(scope: TurnScope): boolean {
  return scope.messages.every(({ inbound }) => inbound.rateLimited !== undefined);
}

/**
 * Answers messages a per-person rate limit stopped, without the model: they join the conversation (the model reads
 * them in a later turn), and the first of a window gets Palaver's notice in the person's interface language; the
 * others get nothing sent.
 */
export async function persistRateLimited(scope: TurnScope): Promise<Answer> {
  const { deps } = scope;
  const usage = await usageOf(scope, []);
  const notice = scope.messages.some(({ inbound }) => inbound.rateLimited === 'notice');
  const text = notice ? systemText(scope.interfaceLanguage, 'limits.perPerson', undefined, deps.agent.defaultLanguage) : '';
  const parts = notice ? splitReply(text, scope.channel.capabilities.maxMessageChars) : [];
  const reply = replyMessage(scope, text, usage, { rateLimited: true });
  const { deliveries } = await closeTurn(scope, {
    // Unnoticed messages are stored as they are: the inbox points at the last of them as answered.
    messages: notice ? [...newMessages(scope), reply] : newMessages(scope),
    session: { status: 'completed' },
    outbox: parts.map((part) => ({ text: part })),
  });
  deps.cache.forgetHistory(scope.session.id);
  deps.metrics.turns.inc({ status: 'completed' });
  return { outcome: outcome(scope, 'completed', text, usage), parts, deliveries };
}
