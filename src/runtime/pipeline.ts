import { ChannelError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { Session, StoredMessage } from '../domain/model.js';
import type { Acceptance, Channel, ChannelContext, InboundMessage } from '../domain/ports/channel.js';
import type { IdentityResolver } from '../domain/ports/identity.js';
import type { Store } from '../domain/ports/store.js';
import type { Participant } from './conversation-cache.js';
import { Inbox } from './inbox.js';
import { runTurn } from './turn.js';
import type { AcceptedMessage, TurnDependencies } from './turn-context.js';

export interface PipelineOptions {
  /** Longest accepted inbound text in characters. */
  readonly maxInboundChars: number;
  /** Inbox quiet window in ms (0: answer at once). */
  readonly debounceMs?: number;
}

/**
 * The one road every message travels, from every channel:
 *
 *   channel (in) → inbound (normalise, dedupe, store) → identity → inbox → turn → reply → channel (out)
 *
 * `accept` is what a channel calls; it resolves once the message is stored and queued. The inbox runs one turn per
 * conversation at a time and answers the messages that arrived meanwhile together, and the turn sends one reply
 * through the channel the batch came from.
 */
export class Pipeline {
  readonly #deps: TurnDependencies;
  readonly #identity: IdentityResolver;
  readonly #options: PipelineOptions;
  readonly #inbox: Inbox<AcceptedMessage>;

  constructor(deps: TurnDependencies, identity: IdentityResolver, options: PipelineOptions) {
    this.#deps = deps;
    this.#identity = identity;
    this.#options = options;
    this.#inbox = new Inbox({
      runBatch: (_key, batch) => this.#runBatch(batch),
      onError: (error, key) => deps.logger.error({ err: error, conversation: key }, 'turn crashed'),
      debounceMs: options.debounceMs ?? 0,
    });
  }

  /** The context a channel is started with: its messages enter the pipeline under its own name. */
  contextFor(channel: Channel): ChannelContext {
    return { accept: (message, options) => this.accept(channel, message, options) };
  }

  /**
   * Normalises, deduplicates and stores a message from `channel`, resolves who sent it, and queues it.
   * @throws ChannelError `inbound_invalid` for empty or oversized text or a message of another channel (nothing is stored then).
   */
  async accept(channel: Channel, message: InboundMessage, options: { readonly signal?: AbortSignal } = {}): Promise<Acceptance> {
    // The channel that hands the message over vouches for it: a message cannot claim another channel's accounts.
    if (message.channel !== channel.name) {
      throw new ChannelError('inbound_invalid', channel.name, `Channel ${channel.name} handed over a message of channel ${message.channel}.`);
    }
    const text = message.text.trim();
    if (!text) throw new ChannelError('inbound_invalid', message.channel, 'The message has no text.');
    if (text.length > this.#options.maxInboundChars) {
      throw new ChannelError('inbound_invalid', message.channel, `The message is too long: ${text.length} characters, at most ${this.#options.maxInboundChars}.`);
    }
    const correlationId = message.correlationId ?? newId();
    const participant = this.#deps.cache.participant(message.channel, message.accountId, message.conversationId) ?? (await this.#join(message, text));

    const stored = await this.#deps.store.transaction(async (tx) => {
      if (message.dedupeKey !== undefined && !(await tx.inbound.remember(message.channel, message.dedupeKey))) return undefined;
      return appendUserMessage(tx, participant.session, text, correlationId);
    });
    if (!stored) {
      this.#deps.metrics.duplicates.inc();
      this.#deps.logger.info({ correlationId, channel: message.channel, dedupeKey: message.dedupeKey }, 'duplicate inbound message ignored');
      return { status: 'duplicate', correlationId };
    }
    this.#inbox.submit(`${message.channel}\u0000${message.conversationId}`, {
      channel,
      ...participant,
      accountId: message.accountId,
      text,
      stored,
      messageId: message.messageId,
      correlationId,
      languageHint: message.languageHint,
      signal: options.signal,
    });
    return { status: 'accepted', correlationId, sessionId: participant.session.id, userId: participant.user.id };
  }

  /** Resolves when every queued turn has finished. */
  drain(): Promise<void> {
    return this.#inbox.drain();
  }

  /** First message of an account in a conversation: who it is (identity), and the conversation's session. */
  async #join(message: InboundMessage, text: string): Promise<Participant> {
    const { user, accounts } = await this.#identity.resolve({ channel: message.channel, accountId: message.accountId, displayName: message.displayName ?? null });
    const session = await this.#deps.store.transaction(async (tx) => {
      const session = await tx.sessions.open({ userId: user.id, channel: message.channel, conversationId: message.conversationId });
      if (session.title === null) await tx.sessions.setTitle(session.id, titleFrom(text));
      return session;
    });
    const participant = { user, accounts, session };
    // Remembered only after the commit: a rolled-back first contact must not be cached.
    this.#deps.cache.rememberParticipant(message.channel, message.accountId, message.conversationId, participant);
    return participant;
  }

  async #runBatch(batch: readonly [AcceptedMessage, ...AcceptedMessage[]]): Promise<void> {
    const first = batch[0];
    if (batch.length > 1) {
      this.#deps.logger.info({ correlationId: first.correlationId, joined: batch.slice(1).map((item) => item.correlationId) }, 'messages answered together');
    }
    const stop = this.#deps.metrics.turnSeconds.startTimer();
    const outcome = await runTurn(this.#deps, { messages: batch });
    const seconds = stop();
    if (outcome) {
      this.#deps.logger.info(
        { correlationId: outcome.correlationId, sessionId: outcome.sessionId, status: outcome.status, ms: Math.round(seconds * 1000), inputTokens: outcome.usage.inputTokens, outputTokens: outcome.usage.outputTokens, cost: outcome.usage.cost },
        'turn finished',
      );
    }
  }
}

/** Stores a person's message; the session has work in flight from then until its turn ends. */
async function appendUserMessage(tx: Store, session: Session, text: string, correlationId: string): Promise<StoredMessage> {
  const [stored] = await tx.messages.append(session.id, [{ role: 'user', audience: 'display', content: text, correlationId }], { status: 'running' });
  return stored!;
}

function titleFrom(text: string): string {
  const line = text.split('\n')[0]!.trim();
  return line.length <= 60 ? line : `${line.slice(0, 59)}…`;
}
