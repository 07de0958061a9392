import { ChannelError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { Session, StoredMessage, User } from '../domain/model.js';
import type { ConversationHandler, InboundMessage, TurnEvent, TurnOutcome } from '../domain/ports/channel.js';
import type { TransactionOptions } from '../domain/ports/store.js';
import { Inbox } from './inbox.js';
import { runTurn, type TurnDependencies } from './turn.js';

export interface RuntimeOptions {
  /** Longest accepted inbound text in characters. */
  readonly maxInboundChars: number;
  /** Inbox quiet window in ms (0: answer at once). */
  readonly debounceMs?: number;
}

const SHARED_COMMIT: TransactionOptions = { shareCommit: true };
const OWN_COMMIT: TransactionOptions = {};

interface AcceptedMessage {
  readonly user: User;
  readonly session: Session;
  readonly message: StoredMessage;
  readonly correlationId: string;
  readonly languageHint: string | undefined;
  readonly onEvent: ((event: TurnEvent) => void) | undefined;
  readonly signal: AbortSignal | undefined;
}

/**
 * The inbound pipeline every channel shares: validate, deduplicate and persist the message (before anything
 * else, so an accepted message survives a crash), resolve the user, then queue it in the conversation's inbox.
 */
export class PalaverRuntime implements ConversationHandler {
  readonly #deps: TurnDependencies;
  readonly #options: RuntimeOptions;
  readonly #inbox: Inbox<AcceptedMessage, TurnOutcome>;

  constructor(deps: TurnDependencies, options: RuntimeOptions) {
    this.#deps = deps;
    this.#options = options;
    this.#inbox = new Inbox({ runBatch: (_key, batch) => this.#runBatch(batch), debounceMs: options.debounceMs ?? 0 });
  }

  /**
   * Accepts a message and resolves with the outcome of the turn that answers it.
   * @throws ChannelError `inbound_invalid` for empty or oversized text (nothing is stored then).
   */
  async handle(message: InboundMessage, options: { onEvent?: (event: TurnEvent) => void; signal?: AbortSignal } = {}): Promise<TurnOutcome> {
    const text = message.text.trim();
    if (!text) throw new ChannelError('inbound_invalid', message.channel, 'The message has no text.');
    if (text.length > this.#options.maxInboundChars) {
      throw new ChannelError('inbound_invalid', message.channel, `The message is too long: ${text.length} characters, at most ${this.#options.maxInboundChars}.`);
    }
    const correlationId = message.correlationId ?? newId();
    const { cache } = this.#deps;
    const known = cache.participant(message.channel, message.accountId, message.conversationId);
    // Not queued yet: any conversation in the inbox is another one.
    const commit = this.#commitOptions(0);
    const accepted = await this.#deps.store.transaction(async (tx) => {
      if (message.dedupeKey && !(await tx.inbound.remember(message.channel, message.dedupeKey))) return undefined;
      let participant = known;
      if (!participant) {
        const { user } = await tx.users.resolveAccount({ channel: message.channel, accountId: message.accountId, displayName: message.displayName ?? null });
        const session = await tx.sessions.open({ userId: user.id, channel: message.channel, conversationId: message.conversationId });
        if (session.title === null) await tx.sessions.setTitle(session.id, titleFrom(text));
        participant = { user, session };
      }
      // The session has work in flight from the moment a message is accepted until its turn ends.
      const [stored] = await tx.messages.append(participant.session.id, [{ role: 'user', audience: 'display', content: text, correlationId }], { status: 'running' });
      return { ...participant, message: stored! };
    }, commit);
    // Remembered only after the commit: a rolled-back first contact must not be cached.
    if (accepted && !known) cache.rememberParticipant(message.channel, message.accountId, message.conversationId, { user: accepted.user, session: accepted.session });
    if (!accepted) {
      this.#deps.metrics.duplicates.inc();
      this.#deps.logger.info({ correlationId, channel: message.channel, dedupeKey: message.dedupeKey }, 'duplicate inbound message ignored');
      return { correlationId, sessionId: '', userId: '', reply: '', replyMessageId: '', status: 'duplicate', usage: { inputTokens: 0, outputTokens: 0, cost: '0', currency: this.#deps.currency } };
    }
    return this.#inbox.submit(`${message.channel}:${message.conversationId}`, {
      ...accepted,
      correlationId,
      languageHint: message.languageHint,
      onEvent: options.onEvent,
      signal: options.signal,
    });
  }

  /**
   * While other conversations have turns in flight, their writes come at about the same time as this one's: let
   * the store commit them together (a hint; it still resolves only once the writes are durable).
   */
  #commitOptions(own: 0 | 1): TransactionOptions {
    return this.#inbox.activeConversations - own > 0 ? SHARED_COMMIT : OWN_COMMIT;
  }

  /** Resolves when every queued turn has finished. */
  drain(): Promise<void> {
    return this.#inbox.drain();
  }

  async #runBatch(batch: readonly AcceptedMessage[]): Promise<TurnOutcome> {
    const first = batch[0]!;
    const last = batch[batch.length - 1]!;
    if (batch.length > 1) {
      this.#deps.logger.info({ correlationId: first.correlationId, joined: batch.slice(1).map((item) => item.correlationId) }, 'messages answered together');
    }
    const listeners = batch.flatMap((item) => (item.onEvent ? [item.onEvent] : []));
    const stop = this.#deps.metrics.turnSeconds.startTimer();
    try {
      const outcome = await runTurn(this.#deps, {
        user: first.user,
        session: first.session,
        newMessages: batch.map((item) => item.message),
        correlationId: first.correlationId,
        commit: this.#commitOptions(1),
        language: last.languageHint ?? this.#deps.agent.defaultLanguage,
        timeZone: this.#deps.agent.defaultTimeZone,
        ...(listeners.length > 0 ? { onEvent: (event: TurnEvent) => listeners.forEach((listener) => listener(event)) } : {}),
        // Only a lone message may cancel its turn; a batch belongs to several callers.
        ...(batch.length === 1 && first.signal ? { signal: first.signal } : {}),
      });
      const seconds = stop();
      this.#deps.logger.info(
        { correlationId: outcome.correlationId, sessionId: outcome.sessionId, status: outcome.status, ms: Math.round(seconds * 1000), inputTokens: outcome.usage.inputTokens, outputTokens: outcome.usage.outputTokens, cost: outcome.usage.cost },
        'turn finished',
      );
      return outcome;
    } catch (error) {
      stop();
      throw error;
    }
  }
}

function titleFrom(text: string): string {
  const line = text.split('\n')[0]!.trim();
  return line.length <= 60 ? line : `${line.slice(0, 59)}…`;
}
